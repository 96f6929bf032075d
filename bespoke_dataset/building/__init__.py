"""`bespoke build`: a release in the public BESPOKE layout from your own users' data (no model call here).

| module | concern |
|---|---|
| `inputs` | the input folder's JSONL files, read and checked: every problem one line naming file and line |
| `authored` | what a model writes for a build (rubrics, claims) as tasks and outcomes, for an author given from outside |
| `review` | the claims review file: written with extracted claims, read back with `--accept` |
| `tables` | the seven tables of the Hub layout, written from the checked input |
| `card` | the release's README.md (and the `{{name}}` templates every card fills) |
| `release` | `build_release`: check, split, author, write, all or nothing |
"""

from .authored import Authored, ClaimTask, IncompleteBuild, RubricTask, rubric_tasks
from .inputs import BuildInputError, read_rubrics_file, rubrics_text
from .release import BUILT_RELEASE, DEFAULT_META_TEST_SHARE, MANIFEST, BuildSummary, build_release
from .review import REVIEW_FILE

__all__ = [
    "BUILT_RELEASE", "DEFAULT_META_TEST_SHARE", "MANIFEST", "REVIEW_FILE", "Authored", "BuildInputError",
    "BuildSummary", "ClaimTask", "IncompleteBuild", "RubricTask", "build_release", "read_rubrics_file",
    "rubric_tasks", "rubrics_text",
]
