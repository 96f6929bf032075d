"""Answers nobody in this project generated: written by hand for the guard tests, in the shapes real
assistants answer in (schedules and tables, code, bullet lists, one-liners, long explanations, eight
languages besides English, answers that end with their sources), each with the question it answers.
None may be caught by a guard. `DEGENERATE` holds what must be caught, with the guard that should
catch it.

Each real answer is `(kind, query, response)`; the kinds are counted by the test so the corpus keeps
its variety.
"""

from __future__ import annotations

import random
import string

_WEEK_ROW = ("| Week {week} | Easy run, 30 minutes, conversational pace | Intervals: 6 x 400 m at 5 km pace, 90 s jog between "
             "| Rest or gentle yoga | Tempo run, 20 minutes at half-marathon pace | Long run, 60 minutes, easy, flat route |")
_TWELVE_WEEKS = "\n".join(
    ["| Week | Monday | Wednesday | Friday | Saturday | Sunday |",
     "|---|---|---|---|---|---|"]
    + [_WEEK_ROW.format(week=week) for week in range(1, 13)]
    + ["", "Same every week: add distance only once it feels easy."])

_KA = "https://www.kingarthurbaking.com"
_TWENTY_SOURCES = (
    "A starter that stops rising is almost always too cold or underfed. Move it somewhere around 24-26 °C, "
    "feed it twice a day at a 1:1:1 ratio (starter, flour, water by weight), and swap a quarter of the white "
    "flour for whole rye or whole wheat: the bran carries wild yeast and the bacteria that give the rise. "
    "After three or four days of regular feeds it should double within six hours again. For the dough itself, "
    "start at 70% hydration while the starter recovers; a weak starter cannot hold a wet dough, and you can "
    "move towards 75-78% once the bulk fermentation looks lively and the dough domes in the tub.\n\n"
    "Sources:\n"
    + "\n".join(f"{i}. {_KA}/blog/{path}?utm_source=search&utm_medium=referral&utm_campaign=answer-sources" for i, path in enumerate([
        "2019/05/24/sourdough-starter-troubleshooting", "2020/03/17/how-to-revive-a-neglected-starter",
        "2018/11/09/rye-flour-in-sourdough", "2021/01/12/the-right-temperature-for-your-starter",
        "2017/08/30/feeding-ratios-explained", "2020/04/02/whole-wheat-starter", "2019/09/14/hydration-basics",
        "2022/02/08/bulk-fermentation-signs", "2020/06/21/stiff-vs-liquid-levain", "2018/03/03/discard-recipes",
        "2021/10/19/winter-baking-tips", "2019/12/01/starter-smells", "2023/01/25/dough-temperature-calculator",
        "2020/08/11/float-test-myths", "2017/04/04/starter-storage", "2022/07/15/high-hydration-doughs",
        "2021/05/30/autolyse-or-not", "2018/06/18/choosing-flour", "2020/11/27/proofing-box-alternatives",
        "2023/03/09/starter-faq"], 1)))

_GUIDE = "https://www.theperfectloaf.com/guides/how-to-make-a-sourdough-starter-from-scratch-and-keep-it-healthy/"
_TWENTY_ANCHORS = (
    "Keep the starter at 24-26 °C and feed it twice a day with some whole rye flour; it should double within six hours "
    "after three or four days. Start the dough at 70% hydration until the starter is lively again.\n\nSources:\n"
    + "\n".join(f"[{i}] {_GUIDE}#troubleshooting-step-{i}" for i in range(1, 21)))

REAL: dict[str, tuple[str, str, str]] = {
    # --- schedules and tables -------------------------------------------------------------------------
    "twelve weeks differing only in the week number": (
        "table", "Give me a 12-week running plan that is the same every week so I can build the habit.", _TWELVE_WEEKS),
    "train timetable": (
        "table", "Which trains can I take from Zurich to Milan on Saturday morning?",
        "| Departs Zürich HB | Arrives Milano Centrale | Train | Change |\n|---|---|---|---|\n"
        "| 06:33 | 09:50 | EC 311 | none |\n| 07:33 | 10:50 | EC 313 | none |\n| 08:33 | 11:50 | EC 315 | none |\n"
        "| 09:33 | 12:50 | EC 317 | none |\n\nAll four are direct EuroCity trains through the Gotthard base tunnel; "
        "book a seat, since Saturday mornings sell out."),
    "laptop comparison": (
        "table", "Compare three laptops under $1,200 for a data science student.",
        "| Model | CPU | RAM | GPU | Weight | Price |\n|:--|:--|--:|:--|--:|--:|\n"
        "| Lenovo ThinkPad E14 Gen 5 | Ryzen 7 7730U | 16 GB | integrated | 1.4 kg | $899 |\n"
        "| ASUS TUF Gaming A15 | Ryzen 7 7735HS | 16 GB | RTX 4060 | 2.2 kg | $1,149 |\n"
        "| MacBook Air M2 | Apple M2 | 16 GB | integrated | 1.2 kg | $1,099 |\n\n"
        "If you will train neural networks locally, the TUF is the only one with a CUDA GPU. For notebooks, "
        "pandas and cloud work the Air lasts longest on battery."),
    "weekly meal plan, same breakfast every day": (
        "table", "Plan a week of vegetarian meals; I want the same breakfast every day to keep mornings simple.",
        "\n".join(f"**{day}**\n- Breakfast: overnight oats with berries and walnuts\n- Lunch: {lunch}\n- Dinner: {dinner}"
                  for day, lunch, dinner in [
                      ("Monday", "lentil soup and rye bread", "chickpea curry with brown rice"),
                      ("Tuesday", "leftover curry wrap", "mushroom risotto"),
                      ("Wednesday", "quinoa salad with feta", "black bean tacos"),
                      ("Thursday", "tomato and white bean soup", "tofu stir-fry with noodles"),
                      ("Friday", "hummus and falafel bowl", "homemade margherita pizza"),
                      ("Saturday", "shakshuka", "vegetable lasagna"),
                      ("Sunday", "leftover lasagna", "spinach and ricotta stuffed shells")])),
    "medication schedule": (
        "table", "How should I space my three medicines during the day?",
        "| Time | Medicine | With food? |\n|---|---|---|\n| 08:00 | Levothyroxine 50 µg | no, 30 min before breakfast |\n"
        "| 09:00 | Metformin 500 mg | yes, with breakfast |\n| 13:00 | Metformin 500 mg | yes, with lunch |\n"
        "| 21:00 | Atorvastatin 20 mg | either |\n\nKeep calcium or iron supplements at least four hours away from "
        "the levothyroxine. Check this plan with your pharmacist, who knows your full list."),
    "monthly budget": (
        "table", "Help me split a 3,200 euro monthly salary.",
        "| Category | Share | Amount |\n|---|---:|---:|\n| Rent and utilities | 35% | €1,120 |\n"
        "| Groceries | 12% | €384 |\n| Transport | 8% | €256 |\n| Savings | 20% | €640 |\n| Insurance | 5% | €160 |\n"
        "| Leisure | 12% | €384 |\n| Buffer | 8% | €256 |\n| **Total** | **100%** | **€3,200** |\n\n"
        "Automate the savings transfer on payday, so it happens before the spending does."),
    "exam revision timetable": (
        "table", "Make me a revision timetable for the two weeks before my chemistry, physics and maths exams.",
        "Days 1-4: one subject per morning, past papers in the afternoon.\n\n"
        "| Day | Morning (3 h) | Afternoon (2 h) |\n|---|---|---|\n| 1 | Organic chemistry | Chemistry paper 2022 |\n"
        "| 2 | Mechanics | Physics paper 2022 |\n| 3 | Calculus | Maths paper 2022 |\n| 4 | Equilibria and kinetics | "
        "Chemistry paper 2021 |\n| 5 | Electricity and waves | Physics paper 2021 |\n| 6 | Statistics | Maths paper 2021 |\n"
        "| 7 | Rest | Rest |\n\nIn the second week repeat the cycle with the 2020 and 2019 papers, and keep the evening "
        "before each exam for flashcards only."),
    "gym split": (
        "table", "What 4-day gym split would you suggest for a beginner?",
        "| Day | Focus | Main lifts |\n|---|---|---|\n| Mon | Upper A | bench press 3x8, barbell row 3x8, overhead press 3x10 |\n"
        "| Tue | Lower A | back squat 3x6, Romanian deadlift 3x8, calf raises 3x15 |\n| Thu | Upper B | incline dumbbell "
        "press 3x10, pull-ups 3xAMRAP, lateral raises 3x15 |\n| Fri | Lower B | deadlift 3x5, leg press 3x10, hanging leg raises "
        "3x12 |\n\nAdd 2.5 kg to a lift when you hit every rep of every set with good form."),
    # --- code -----------------------------------------------------------------------------------------
    "python function": (
        "code", "How do I read a CSV file and get the average of one column in Python?",
        "Use the standard library's `csv` module, no pandas needed:\n\n```python\nimport csv\n\n\ndef column_mean(path, column):\n"
        "    with open(path, newline=\"\") as handle:\n        values = [float(row[column]) for row in csv.DictReader(handle) if row[column]]\n"
        "    return sum(values) / len(values)\n\n\nprint(column_mean(\"sales.csv\", \"amount\"))\n```\n\nEmpty cells are skipped; "
        "a cell that is not a number raises `ValueError` naming it."),
    "bash only": (
        "code", "Find every file over 100 MB in my home folder, largest first.",
        "```bash\nfind ~ -type f -size +100M -printf '%s\\t%p\\n' 2>/dev/null \\\n  | sort -rn \\\n  | awk -F'\\t' "
        "'{ printf \"%.1f GB\\t%s\\n\", $1/1e9, $2 }'\n```"),
    "sql query": (
        "code", "Write a SQL query for each customer's most recent order.",
        "```sql\nSELECT customer_id, order_id, ordered_at\nFROM (\n    SELECT customer_id, order_id, ordered_at,\n"
        "           ROW_NUMBER() OVER (PARTITION BY customer_id ORDER BY ordered_at DESC) AS rn\n    FROM orders\n) ranked\n"
        "WHERE rn = 1;\n```\n\nThe window function keeps one row per customer; with ties on `ordered_at`, add `order_id DESC` to "
        "the `ORDER BY` to make the pick deterministic."),
    "javascript with explanation": (
        "code", "How do I debounce a search box in JavaScript?",
        "Wait until the user stops typing for a moment before sending the request:\n\n```javascript\nfunction debounce(fn, ms) {\n"
        "  let timer;\n  return (...args) => {\n    clearTimeout(timer);\n    timer = setTimeout(() => fn(...args), ms);\n  };\n}\n\n"
        "const input = document.querySelector('#search');\ninput.addEventListener('input', debounce((event) => {\n"
        "  fetch(`/api/search?q=${encodeURIComponent(event.target.value)}`)\n    .then((r) => r.json())\n    .then(render);\n"
        "}, 300));\n```\n\n300 ms feels instant to most people while cutting the requests by an order of magnitude."),
    "yaml config": (
        "code", "What should my GitHub Actions workflow look like to run pytest on three Python versions?",
        "```yaml\nname: tests\non: [push, pull_request]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    strategy:\n      matrix:\n"
        "        python: [\"3.10\", \"3.11\", \"3.12\"]\n    steps:\n      - uses: actions/checkout@v4\n"
        "      - uses: actions/setup-python@v5\n        with:\n          python-version: ${{ matrix.python }}\n"
        "      - run: pip install -e \".[test]\"\n      - run: pytest -q\n```"),
    "regex": (
        "code", "Regex for a UK postcode?",
        "A practical pattern (not every edge case of the Royal Mail spec, but it accepts real postcodes):\n\n"
        "```\n^[A-Z]{1,2}[0-9][A-Z0-9]? ?[0-9][A-Z]{2}$\n```\n\nMatch case-insensitively and strip spaces first if users type them oddly."),
    "rust snippet": (
        "code", "How do I count word frequencies in Rust?",
        "```rust\nuse std::collections::HashMap;\n\nfn main() {\n    let text = \"the cat and the hat\";\n"
        "    let mut counts: HashMap<&str, usize> = HashMap::new();\n    for word in text.split_whitespace() {\n"
        "        *counts.entry(word).or_insert(0) += 1;\n    }\n    println!(\"{:?}\", counts);\n}\n```\n\n"
        "`entry` inserts a zero the first time a word is seen, so one line handles new and old words."),
    "config with repeated keys": (
        "code", "Can you show an nginx config for two sites on one server?",
        "```nginx\nserver {\n    listen 80;\n    server_name blog.example.org;\n    root /var/www/blog;\n    index index.html;\n}\n\n"
        "server {\n    listen 80;\n    server_name shop.example.org;\n    root /var/www/shop;\n    index index.html;\n}\n```\n\n"
        "Each `server` block answers for its own `server_name`; reload with `sudo nginx -t && sudo systemctl reload nginx`."),
    # --- bullet lists ---------------------------------------------------------------------------------
    "packing list": (
        "list", "What should I pack for a 3-day hut-to-hut hike in the Dolomites in September?",
        "- Waterproof jacket and overtrousers (afternoon storms are common)\n- Warm mid layer: nights at the huts drop near 0 °C\n"
        "- Sleeping bag liner (required in most rifugi)\n- Headtorch, small first-aid kit, blister plasters\n"
        "- Cash: many huts do not take cards\n- Via ferrata kit only if your route has one\n- 1.5 L of water capacity; huts sell more\n"
        "- Earplugs for the dormitories"),
    "checklist": (
        "list", "What do I need to do before selling my car privately?",
        "- [ ] Find the V5C logbook and service history\n- [ ] Get a fresh MOT if the current one runs out within three months\n"
        "- [ ] Clean it inside and out, and photograph it in daylight\n- [ ] Check the price against three comparable adverts\n"
        "- [ ] Cancel or transfer the insurance on the day of sale\n- [ ] Tell the DVLA online once the buyer drives away"),
    "numbered steps": (
        "list", "How do I repot a root-bound monstera?",
        "1. Water it the day before, so the root ball slides out whole.\n2. Pick a pot only 5 cm wider, with drainage holes.\n"
        "3. Tease the circling roots loose with your fingers; cut any that are black and mushy.\n"
        "4. Use a chunky mix: two parts potting soil, one part orchid bark, one part perlite.\n"
        "5. Set it at the same depth as before and add the moss pole now, not later.\n6. Keep it out of direct sun for a week."),
    "nested list": (
        "list", "Which documents do I need to renew my German residence permit?",
        "You will usually need:\n\n- Identity\n  - passport valid for the whole new permit\n  - one biometric photo\n"
        "- Income\n  - last three payslips\n  - employment contract or employer's letter\n- Housing\n  - rental contract\n"
        "  - Wohnungsgeberbestätigung if you moved\n- Health insurance certificate\n\nBook the Ausländerbehörde appointment at "
        "least eight weeks ahead; the Fiktionsbescheinigung covers you if it expires meanwhile."),
    "pros and cons": (
        "list", "Should I buy a heat pump or replace my gas boiler?",
        "**Heat pump**\n- lower running cost if your house is insulated and you have radiators sized for 45-50 °C water\n"
        "- grants cover a large part of the install in many countries\n- upfront cost two to three times a boiler's\n\n"
        "**New gas boiler**\n- cheap and quick to fit\n- gas prices and future bans make it the riskier long-term bet\n\n"
        "Get a heat-loss survey first: it tells you which radiators would need upsizing."),
    "book list with names": (
        "list", "Recommend some Japanese novels in translation for a beginner.",
        "- *Kitchen* by Banana Yoshimoto: short, gentle, about grief and cooking\n- *Convenience Store Woman* by Sayaka Murata\n"
        "- *The Makioka Sisters* by Jun'ichirō Tanizaki, if you want something long and immersive\n"
        "- *Norwegian Wood* by Haruki Murakami, his most straightforward novel\n- *Strange Weather in Tokyo* by Hiromi Kawakami\n"
        "- *Kokoro* by Natsume Sōseki, the classic"),
    "place names": (
        "list", "What should I see on a five-day drive along Iceland's south coast?",
        "Day 1: Þingvellir, Geysir and Gullfoss (the Golden Circle).\nDay 2: Seljalandsfoss, Skógafoss and the black beach at "
        "Reynisfjara near Vík.\nDay 3: Fjaðrárgljúfur canyon, then Skaftafell for the Svartifoss walk.\nDay 4: Jökulsárlón "
        "glacier lagoon and Diamond Beach at sunrise.\nDay 5: drive back to Reykjavík, with a soak at Seljavallalaug on the way."),
    "shopping list with quantities": (
        "list", "What do I buy for a lasagna for eight people?",
        "- 500 g dried lasagna sheets\n- 800 g beef mince (or 400 g beef + 400 g pork)\n- 2 x 400 g tins chopped tomatoes\n"
        "- 1 onion, 2 carrots, 2 celery sticks\n- 150 ml red wine\n- 80 g butter, 80 g flour, 1 L milk for the béchamel\n"
        "- 200 g Parmigiano Reggiano\n- nutmeg, bay leaves, salt, pepper"),
    # --- one-line answers -----------------------------------------------------------------------------
    "one line: yes and why": (
        "one-line", "Can I freeze cooked rice?", "Yes: cool it within an hour, freeze it flat in a bag, and reheat until steaming."),
    "one line: a number": ("one-line", "How far is a marathon?", "42.195 km, or 26.2 miles."),
    "one line: a time": ("one-line", "When does the Louvre open on Fridays?", "It opens at 9:00 and stays open until 21:45 on Fridays."),
    "one line: a name": ("one-line", "Who wrote 'One Hundred Years of Solitude'?", "Gabriel García Márquez, in 1967."),
    "one line: a command": ("one-line", "How do I undo my last git commit but keep the changes?", "Run `git reset --soft HEAD~1`."),
    "one line: no": ("one-line", "Do I need a visa for Japan with a Canadian passport for a two-week trip?",
                     "No, Canadians can stay up to 90 days visa-free as tourists."),
    "one line: a recommendation": ("one-line", "Best beginner houseplant that survives neglect?",
                                   "A snake plant: water it once a month and it will be fine."),
    "one line: a price": ("one-line", "How much is a Eurail pass for one month?", "About €600 for adults in second class."),
    # --- long explanations ----------------------------------------------------------------------------
    "long explanation: compound interest": (
        "long", "Explain compound interest to me like I'm starting my first savings account.",
        "Compound interest means you earn interest not only on the money you put in, but also on the interest you have "
        "already earned. Suppose you deposit 1,000 dollars at 5% a year. After the first year you have 1,050. In the second "
        "year the 5% is paid on 1,050, not on 1,000, so you earn 52.50 instead of 50, and end with 1,102.50. The difference "
        "looks tiny at first, but it grows every year, because each year's interest becomes part of the base for the next.\n\n"
        "Two things make compounding powerful: time and regularity. Time matters because the growth is exponential: at 5% "
        "your money doubles roughly every 14 years (the rule of 72: divide 72 by the rate). Regularity matters because every "
        "deposit starts its own snowball. Someone who saves 100 a month from age 25 usually ends up with more at 65 than "
        "someone who saves 200 a month from age 40, even though the second person put in more money in total.\n\n"
        "For your first account, look at the annual percentage yield (APY), which already includes compounding, rather than "
        "the nominal rate, and check whether the bank charges fees that would eat the interest. Then set up an automatic "
        "transfer on payday, so saving happens without a decision each month."),
    "long explanation: why the sky is blue": (
        "long", "Why is the sky blue but sunsets are red?",
        "Sunlight contains every visible colour. When it passes through the atmosphere it meets gas molecules much smaller "
        "than its wavelength, and those scatter short wavelengths far more strongly than long ones: the effect, Rayleigh "
        "scattering, grows with the inverse fourth power of the wavelength, so blue light at 450 nm is scattered about four "
        "times more than red light at 650 nm. Looking at any part of the sky away from the sun, you see light that has been "
        "scattered towards you, and that light is dominated by blue. Violet is scattered even more, but the sun emits less "
        "of it, some is absorbed high up, and our eyes are less sensitive to it, so the mix looks sky blue.\n\n"
        "At sunrise and sunset the sunlight crosses a much longer path through the air before it reaches you, up to forty "
        "times the thickness it crosses at noon. Along that path most of the blue has been scattered out sideways, so what "
        "arrives directly is the remaining orange and red. Dust, smoke and sea salt add larger particles that scatter all "
        "colours more evenly, which is why sunsets after a volcanic eruption or during wildfire season can be especially vivid."),
    "long explanation with headings": (
        "long", "What is the difference between a Roth IRA and a traditional IRA, and which suits me at 28 earning $60k?",
        "## The core difference\n\nBoth are retirement accounts with the same contribution limit; they differ in when you pay "
        "tax. With a **traditional IRA** you may deduct contributions now and pay income tax when you withdraw in retirement. "
        "With a **Roth IRA** you contribute money that has already been taxed, and qualified withdrawals, growth included, "
        "are tax-free.\n\n## What decides it\n\nThe question is whether your tax rate today is higher or lower than it will be "
        "when you withdraw. At 28 on $60,000 you are probably in the 12% federal bracket, which is low compared with what most "
        "people pay later in their careers. Paying 12% now to never pay tax on decades of growth is usually a good trade.\n\n"
        "## Other points in the Roth's favour\n\n- You can withdraw your contributions (not the earnings) at any time without "
        "penalty, which makes it a backup emergency fund.\n- There are no required minimum distributions during your "
        "lifetime.\n\n## My suggestion\n\nFirst take any employer 401(k) match, since that is an instant return. Then fund a "
        "Roth IRA, invested in a low-cost broad index fund, and revisit the choice if your income rises into the 24% bracket."),
    "long explanation: a history answer": (
        "long", "Why did the Roman Republic fall?",
        "Historians rarely name a single cause. In the second century BC, conquest brought enormous wealth to Rome, but it "
        "was spread very unevenly. Small farmers who served in the legions for years came home to find their land bought "
        "up by senators running large estates worked by slaves. The Gracchi brothers tried to redistribute public land and "
        "were both killed by political opponents, which showed that violence could now settle political disputes.\n\n"
        "Marius then opened the army to the landless poor, who depended on their general rather than the state for pay and "
        "land on discharge. Armies became loyal to individuals: Sulla marched on Rome in 88 BC, and a generation later Caesar "
        "crossed the Rubicon. The institutions of the Republic, designed for a city-state with annual magistrates, could not "
        "control commanders holding provinces and armies for years. After Caesar's assassination the civil wars ended only "
        "when Octavian defeated Antony and Cleopatra at Actium in 31 BC, and in 27 BC he accepted the title Augustus, keeping "
        "the forms of the Republic while holding real power himself."),
    "long explanation: medical, cautious": (
        "long", "My resting heart rate went from 58 to 72 over the last month. Should I worry?",
        "A rise of that size is worth paying attention to, but it has many harmless explanations. Resting heart rate goes up "
        "with poor sleep, stress, alcohol, caffeine, dehydration, a recent cold or infection, and a drop in training. Some "
        "medicines, including decongestants and certain asthma inhalers, raise it as well, and so can an overactive "
        "thyroid. If you measure with a watch, check that it was worn the same way; wrist sensors read higher when loose.\n\n"
        "Things you can do this week: measure it by hand in the morning before getting up, for a full minute, on several "
        "days; note your sleep, alcohol and caffeine; and see whether it settles after a few quiet days. See a doctor soon "
        "if it stays above your usual level, and at once if you have chest pain, fainting, shortness of breath or a "
        "heartbeat that feels irregular. A simple ECG and a blood test for thyroid function and anaemia answer most of the "
        "open questions."),
    # --- other languages (query and answer in one language) -------------------------------------------
    "German": (
        "de", "Wie bekomme ich meinen Rasen im Frühjahr wieder dicht?",
        "Vertikutiere den Rasen Anfang April, sobald der Boden abgetrocknet ist, und entferne dabei Moos und Filz. "
        "Danach die kahlen Stellen mit einer Nachsaatmischung einsäen, leicht mit Erde abdecken und drei Wochen lang "
        "feucht halten. Gedüngt wird etwa zwei Wochen später mit einem stickstoffbetonten Frühjahrsdünger. Mähe in den "
        "ersten Wochen nicht kürzer als fünf Zentimeter, damit die jungen Gräser kräftig werden."),
    "French": (
        "fr", "Quels papiers faut-il pour louer un appartement à Paris ?",
        "Les propriétaires demandent en général :\n\n- une pièce d'identité ;\n- vos trois derniers bulletins de salaire et "
        "votre contrat de travail ;\n- votre dernier avis d'imposition ;\n- les trois dernières quittances de loyer de votre "
        "logement actuel.\n\nSans garant en France, la garantie Visale, gratuite, rassure beaucoup de propriétaires : "
        "faites la demande en ligne avant de visiter."),
    "Spanish": (
        "es", "¿Qué ruta me recomiendas para recorrer Andalucía en una semana en coche?",
        "Empieza en Sevilla (dos días: la catedral, el Alcázar y Triana), sigue a Córdoba para ver la Mezquita, y dedica dos "
        "días a Granada y la Alhambra; reserva la entrada con semanas de antelación. Desde allí baja a la costa por Ronda, "
        "que merece una noche, y termina en Málaga. Son unos 650 kilómetros en total, con tramos cortos cada día."),
    "Italian": (
        "it", "Come posso preparare una vera carbonara romana?",
        "Per due persone: 200 g di spaghetti, 100 g di guanciale, 3 tuorli e un uovo intero, 50 g di pecorino romano e pepe "
        "nero. Rosola il guanciale a pezzetti senza olio finché diventa croccante. Sbatti le uova con il pecorino e "
        "molto pepe. Scola la pasta al dente, mescolala con il guanciale fuori dal fuoco e aggiungi le uova con un po' "
        "d'acqua di cottura, mescolando finché la crema diventa lucida. Niente panna, niente aglio."),
    "Portuguese": (
        "pt", "Quais são os melhores bairros para ficar em Lisboa pela primeira vez?",
        "Para uma primeira visita, o Chiado e a Baixa são os mais práticos: ficam perto do metro, dos elétricos e da "
        "maioria dos monumentos. Se preferir um ambiente mais tradicional, Alfama tem ruas estreitas e fado à noite, mas "
        "muitas subidas. O Príncipe Real é mais calmo e tem bons restaurantes. Evite o Bairro Alto se tiver sono leve, "
        "porque a vida noturna vai até tarde."),
    "Japanese": (
        "ja", "京都で紅葉を見るのに一番いい時期はいつですか？",
        "京都の紅葉の見頃は、例年11月中旬から12月上旬です。特に東福寺や永観堂は11月下旬が最も美しく、"
        "混雑を避けたいなら朝8時前に行くのがおすすめです。嵐山は少し早めに色づくので、11月中旬に訪れると良いでしょう。"),
    "Chinese": (
        "zh", "第一次去北京旅游，四天应该怎么安排？",
        "第一天参观天安门广场和故宫，记得提前在网上预约门票。第二天去八达岭或慕田峪长城，慕田峪人少一些。"
        "第三天上午游览颐和园，下午去圆明园。第四天逛天坛，然后在胡同里走走，晚上可以去吃北京烤鸭。"),
    "Korean": (
        "ko", "서울에서 주말에 가기 좋은 등산 코스를 추천해 주세요.",
        "초보자라면 북한산 둘레길이나 인왕산을 추천합니다. 인왕산은 두 시간 정도면 정상에 오를 수 있고, "
        "정상에서 서울 도심이 한눈에 보입니다. 조금 더 도전하고 싶다면 북한산 백운대 코스를 가 보세요. "
        "주말에는 사람이 많으니 아침 일찍 출발하는 것이 좋습니다."),
    "Russian": (
        "ru", "Как подготовиться к первому полумарафону за три месяца?",
        "Бегайте четыре раза в неделю: три лёгкие пробежки и одну длинную. Длинную пробежку увеличивайте на километр "
        "каждую неделю, пока не дойдёте до 18 километров за три недели до старта. Раз в неделю добавляйте интервалы или "
        "темповый бег. За десять дней до забега снизьте объём вдвое, а в день старта не пробуйте ничего нового."),
    "Turkish": (
        "tr", "İstanbul'da üç günde neler görmeliyim?",
        "İlk gün Sultanahmet'te Ayasofya, Sultanahmet Camii ve Topkapı Sarayı'nı gezin. İkinci gün Kapalıçarşı ve "
        "Mısır Çarşısı'ndan sonra Boğaz'da bir vapur turu yapın. Üçüncü gün Galata Kulesi'ne çıkıp İstiklal Caddesi "
        "boyunca yürüyün, akşam da Kadıköy'e geçip yemek yiyin."),
    "Dutch": (
        "nl", "Hoe kan ik het beste mijn fiets winterklaar maken?",
        "Maak de ketting goed schoon en smeer hem in met een dikkere wintervet, want regen en strooizout spoelen gewone olie "
        "snel weg. Controleer de remblokken en de verlichting, en zet de banden iets zachter voor meer grip. Spuit na een "
        "rit over zout het frame af met lauw water."),
    "German table": (
        "de", "Welche Züge fahren morgen früh von Berlin nach Hamburg?",
        "| Abfahrt Berlin Hbf | Ankunft Hamburg Hbf | Zug |\n|---|---|---|\n| 06:37 | 08:25 | ICE 1000 |\n"
        "| 07:37 | 09:25 | ICE 1002 |\n| 08:37 | 10:25 | ICE 1004 |\n\nAlle Verbindungen sind direkt; mit dem Sparpreis "
        "lohnt es sich, früh zu buchen."),
    # --- answers that end with their sources ----------------------------------------------------------
    "twenty source URLs of one site": ("sources", "Why is my sourdough starter not rising?", _TWENTY_ANCHORS),
    "twenty blog URLs of one site": ("sources", "Why is my sourdough starter not rising, and what hydration should "
                                                  "my dough have?", _TWENTY_SOURCES),
    "citation markers and a citations list": (
        "sources", "What is the current recommended daily intake of vitamin D for adults?",
        "Most health agencies recommend 600 IU (15 µg) a day for adults up to 70 and 800 IU (20 µg) above 70 [1][2]. "
        "Some guidelines for people with little sun exposure suggest 1,000-2,000 IU [3]. The safe upper limit for adults is "
        "4,000 IU a day [1].\n\n[1] https://ods.od.nih.gov/factsheets/VitaminD-HealthProfessional/\n"
        "[2] https://www.nhs.uk/conditions/vitamins-and-minerals/vitamin-d/\n[3] https://www.endocrine.org/clinical-practice-guidelines/vitamin-d"),
    "markdown links as sources": (
        "sources", "Is it safe to eat raw cookie dough?",
        "Not entirely: raw flour can carry E. coli and raw eggs can carry Salmonella. Heat-treated flour and pasteurised "
        "eggs make it safe, which is what commercial edible cookie dough uses.\n\nSources: "
        "[FDA: Raw dough's a raw deal](https://www.fda.gov/consumers/consumer-updates/raw-dough-raw-deal-and-could-make-you-sick), "
        "[CDC: Say no to raw dough](https://www.cdc.gov/foodsafety/communication/no-raw-dough.html)"),
    "sources with titles from one site": (
        "sources", "How often should I water tomato plants in containers?",
        "In summer, container tomatoes usually need water every day, and twice on hot, windy days: push a finger 3 cm into "
        "the compost and water when it is dry. Water the soil, not the leaves, and in the morning, so the plant has what "
        "it needs through the heat. Uneven watering causes blossom end rot and split fruit.\n\n"
        "Sources:\n- RHS: Tomatoes, growing guide - https://www.rhs.org.uk/vegetables/tomatoes/grow-your-own\n"
        "- RHS: Blossom end rot - https://www.rhs.org.uk/disease/blossom-end-rot\n"
        "- RHS: Watering containers - https://www.rhs.org.uk/garden-jobs/watering-containers\n"
        "- RHS: Feeding tomatoes - https://www.rhs.org.uk/vegetables/tomatoes/feeding"),
    "perplexity-style answer": (
        "sources", "Which is faster for a short trip in Tokyo, the JR Yamanote line or the metro?",
        "For most trips inside central Tokyo the metro is as fast or faster, because its lines cut across the city while "
        "the Yamanote line runs in a loop [1]. The Yamanote is simpler for stations on the loop such as Shinjuku, Shibuya "
        "and Ueno, and trains come every 3-4 minutes [2]. A Suica or Pasmo card works on both [3].\n\n"
        "1. https://www.japan-guide.com/e/e2363.html\n2. https://www.jreast.co.jp/e/routemaps/\n3. https://www.tokyometro.jp/en/ticket/"),
    "openai-style citation marks": (
        "sources", "When was the Eiffel Tower built?",
        "It was built between 1887 and 1889 as the entrance arch to the 1889 World's Fair 【3†source】, and was the tallest "
        "man-made structure in the world until 1930 【5†source】."),
    # --- other shapes ---------------------------------------------------------------------------------
    "faq with repeated labels": (
        "other", "I'm adopting a cat next week. What do I need to know?",
        "**Q: What should I buy first?**\nA: A litter tray, unscented clumping litter, food bowls, a scratching post and a "
        "carrier.\n\n**Q: How long until it settles?**\nA: Usually one to three weeks; give it one quiet room at first.\n\n"
        "**Q: When should it see a vet?**\nA: In the first week, for a check-up, vaccinations and a microchip if it has none.\n\n"
        "**Q: Can it go outside?**\nA: Keep it in for at least a month, so it learns where home is."),
    "math": (
        "other", "What is the derivative of x^2 sin(x)?",
        "By the product rule, d/dx [x² sin x] = 2x sin x + x² cos x."),
    "recipe": (
        "other", "Quick recipe for pancakes without eggs?",
        "Mix 200 g flour, 2 tsp baking powder, 1 tbsp sugar and a pinch of salt. Whisk in 300 ml milk (any kind) and "
        "2 tbsp melted butter until just combined; a few lumps are fine. Rest 5 minutes, then cook ladlefuls in a hot "
        "buttered pan until bubbles form, about 2 minutes, flip, and give them one more minute."),
    "emoji-heavy answer": (
        "other", "Ideas for my daughter's 7th birthday party at home?",
        "🎨 Art station with aprons and canvas bags to decorate\n🧁 Cupcake decorating instead of one big cake\n"
        "🕵️ A treasure hunt with picture clues around the garden\n🎶 Musical statues between activities\n"
        "🎁 Let each child take home what they made, no goodie bags needed"),
    "dialogue script": (
        "other", "How do I ask my manager for a raise? Give me what to say.",
        "You: \"Thanks for making time. I'd like to talk about my compensation.\"\nYou: \"Over the past year I led the "
        "migration to the new billing system, which cut support tickets by a third, and I've taken on onboarding for "
        "new hires.\"\nYou: \"Based on that and on market data for this role, I'm asking for a salary of 72,000.\"\n"
        "Manager: \"I'll need to check the budget.\"\nYou: \"Of course. Could we agree on a date to follow up, say two weeks "
        "from now?\""),
    "answer with many numbers": (
        "other", "What were the splits of my 10k if I ran 48:30 evenly?",
        "An even 48:30 is 4:51 per kilometre. Your splits would be: 1 km 4:51, 2 km 9:42, 3 km 14:33, 4 km 19:24, "
        "5 km 24:15, 6 km 29:06, 7 km 33:57, 8 km 38:48, 9 km 43:39, 10 km 48:30."),
    "answer that restates then answers": (
        "other", "Is it better to rent or buy a flat in Berlin right now?",
        "Whether to rent or buy in Berlin right now depends mostly on how long you will stay. Buying costs about 10-12% "
        "of the price in taxes and fees up front, so it rarely pays off in under eight to ten years. With mortgage rates "
        "around 3.5-4% and prices that fell slightly in 2023, buying is more reasonable than two years ago, but renting "
        "keeps you flexible if you might move for work."),
    "haiku": ("other", "Write me a haiku about autumn rain.",
              "Cold rain on the roof\nthe last maple leaves let go\ntea steam on the glass"),
    "code-switching technical": (
        "other", "How do I fix 'CUDA out of memory' when fine-tuning Llama with LoRA?",
        "Lower `per_device_train_batch_size` to 1 and raise `gradient_accumulation_steps` to keep the effective batch; "
        "turn on `gradient_checkpointing=True`; load the base model in 4-bit with bitsandbytes (QLoRA); and cap "
        "`max_seq_length` at 1024 if your data allows. If it still fails, set "
        "`PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` to reduce fragmentation."),
    "short two-line answer": ("one-line", "What temperature for a medium-rare steak?",
                              "Pull it at 52 °C.\nIt climbs to about 55 °C while it rests."),
}

_RNG = random.Random(0)
_PRINTABLE = string.ascii_letters + string.digits + string.punctuation
_FILLER = "This is a really helpful and detailed answer to your question."

DEGENERATE: dict[str, tuple[str, str]] = {
    # name -> (response, the guard that must catch it); the query is `DEGENERATE_QUERY`
    "empty": ("", "empty"),
    "whitespace": ("  \n\t ", "empty"),
    "ok": ("ok", "empty"),
    "ok ok ok": ("ok ok ok", "empty"),
    "ok x25": ("ok " * 25, "empty"),
    "ok. x40": ("ok. " * 40, "empty"),
    "yes, lines": ("yes\n" * 30, "empty"),
    "two words x20": ("great answer " * 20, "empty"),
    "punctuation": ("!?.,;:-*" * 10, "empty"),
    "citation markers only": ("[1][2][3] [4]", "empty"),
    "urls only": ("https://example.com/a https://example.com/b https://example.com/c", "empty"),
    "query echoed": ("Why is my sourdough starter not rising and how should I change the dough hydration?", "echo"),
    "sentence x40": (" ".join([_FILLER] * 40), "repetition"),
    "sentence x40, one a line": ("\n".join([_FILLER] * 40), "repetition"),
    "numbered sentence x30": ("\n".join(f"{i}. {_FILLER}" for i in range(1, 31)), "repetition"),
    "three words x10": ("ok thanks bye " * 10, "repetition"),
    "answer then a loop": ("Feed it twice a day. " + "I hope this helps you a lot. " * 30, "repetition"),
    "characters repeated": ("ab" * 400, "repetition"),
    "random letters": ("".join(_RNG.choice(string.ascii_letters) for _ in range(300)), "no_words"),
    "random words": (" ".join("".join(_RNG.choice(string.ascii_lowercase) for _ in range(2 + i % 6)) for i in range(60)),
                     "no_words"),
    "random printable": ("".join(_RNG.choice(_PRINTABLE) for _ in range(300)), "no_words"),
    "random numbers": (" ".join(str(_RNG.randint(0, 9999)) for _ in range(60)), "no_words"),
    # the SmolLM2 answer at 32 tokens, and refusals as assistants word them
    "refusal, cut off": ("I'm sorry, but I'm not equipped to provide personalized advice on sourdough starters. However, "
                         "I can suggest some factors you", "refusal"),
    "refusal, one line": ("I'm sorry, but I can't help with that.", "refusal"),
    "refusal, as an AI": ("As an AI language model, I don't have hands to bake with, so I cannot give advice on your "
                          "dough. Please consult a professional baker.", "refusal"),
    "refusal, unable": ("I am unable to answer questions about baking.", "refusal"),
    "another language": ("Dein Sauerteig braucht häufigere Fütterungen bei wärmerer Temperatur. Beginne mit etwa "
                         "siebzig Prozent Hydratation und achte auf das Volumen.", "language"),
}
DEGENERATE_QUERY = "Why is my sourdough starter not rising and how should I change the dough hydration?"
