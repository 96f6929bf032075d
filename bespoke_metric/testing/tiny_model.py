"""A tiny randomly initialised causal LM with a real tokenizer and chat template, built in place.

For tests and GPU benchmarks that must not download anything: a 2-layer Llama with a byte-level BPE
tokenizer trained on a few sentences. It loads with `AutoModelForCausalLM` / `AutoTokenizer` like any Hub
model and generates a batch in a fraction of a second on a CPU. Its answers are gibberish; what it
exercises is the real code path (chat template, padding, batching, decoding). Seeded, so the same
arguments give the same weights, the same tokenizer and the same greedy outputs.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from bespoke_dataset.errors import require_extra

CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "<|{{ message['role'] }}|>{{ message['content'] }}<|end|>"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
TOOLS_CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% if tools %}<|system|>You may call these tools:\n<tools>\n"
    "{% for tool in tools %}{{ tool | tojson }}\n{% endfor %}</tools>\n"
    'To call one, answer <tool_call>{"name": NAME, "arguments": {...}}</tool_call><|end|>{% endif %}'
    "{% for message in messages %}"
    "{% if message['role'] == 'tool' %}<|user|><tool_response>{{ message['content'] }}</tool_response><|end|>"
    "{% elif message['role'] == 'assistant' and message.tool_calls %}<|assistant|>{{ message['content'] or '' }}"
    "{% for call in message.tool_calls %}<tool_call>"
    "{{ {'name': call['function']['name'], 'arguments': call['function']['arguments']} | tojson }}"
    "</tool_call>{% endfor %}<|end|>"
    "{% else %}<|{{ message['role'] }}|>{{ message['content'] }}<|end|>{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
"""A chat template that renders tools the way Hermes and Qwen templates do: the tools as JSON in a system
turn, calls as `<tool_call>` JSON blocks, their answers as `<tool_response>` turns."""
SPECIAL_TOKENS = ["<|pad|>", "<|bos|>", "<|end|>", "<|system|>", "<|user|>", "<|assistant|>"]

_TRAINING_TEXT = [
    "The user asked about hiking trails near Seoul and how crowded they get on weekends.",
    "Need Alignment Score: 4. Content Depth Score: 3. Tone Score: 5. Explanation Style Score: 4.",
    "Feedback: the response covers the main points but misses the budget the user mentioned.",
    "Search history: best laptop for machine learning, python asyncio tutorial, vegan recipes.",
    "A personalized answer uses what the user already knows and skips what they do not need.",
    '{"verdict": true, "claims": [1, 2, 3], "score": 5, "feedback": "clear and specific"}',
    "Explain the difference between a rubric and a checklist in plain words, with one example.",
    "0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ .,;:!?'\"()[]{}<>-_/\\",
]


def build_tiny_model(
    out_dir: str | os.PathLike[str],
    *,
    seed: int = 0,
    hidden_size: int = 64,
    num_layers: int = 2,
    vocab_size: int = 512,
    tools: bool = False,
) -> Path:
    """Write a tiny random Llama model and its tokenizer to `out_dir` (replacing what is there) and
    return the folder. Load it with `AutoModelForCausalLM.from_pretrained(out_dir)` or `hf:<out_dir>`.
    `tools`: a chat template that renders tools (`TOOLS_CHAT_TEMPLATE`), so the model takes them."""
    torch = require_extra("torch", "hf", "build_tiny_model")
    transformers = require_extra("transformers", "hf", "build_tiny_model")
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    out = Path(out_dir)
    staging = out.with_name(f"{out.name}.partial-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(_TRAINING_TEXT, trainer)
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        bos_token="<|bos|>",
        eos_token="<|end|>",
        pad_token="<|pad|>",
        additional_special_tokens=["<|system|>", "<|user|>", "<|assistant|>"],
        padding_side="left",
    )
    tokenizer.chat_template = TOOLS_CHAT_TEMPLATE if tools else CHAT_TEMPLATE

    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=32768,  # judge prompts (rubric + examples) are long in byte-level tokens
        # Well-separated logits, so greedy choices do not flip on float rounding between batch shapes.
        initializer_range=0.2,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    model = transformers.LlamaForCausalLM(config)
    model.generation_config = transformers.GenerationConfig(
        do_sample=False,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model.save_pretrained(staging)
    tokenizer.save_pretrained(staging)
    # Publish the folder whole or not at all.
    shutil.rmtree(out, ignore_errors=True)
    os.replace(staging, out)
    return out
