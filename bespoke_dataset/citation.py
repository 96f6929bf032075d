"""How to cite BESPOKE and where its release lives: for dataset cards, Space cards and builders alike."""

CITATION = """@misc{kim2025bespokebenchmarksearchaugmentedlarge,
  title={BESPOKE: Benchmark for Search-Augmented Large Language Model Personalization via Diagnostic Feedback},
  author={Hyunseo Kim and Sangam Lee and Kwangwook Seo and Dongha Lee},
  year={2025},
  eprint={2509.21106},
  archivePrefix={arXiv},
  primaryClass={cs.CL},
  url={https://arxiv.org/abs/2509.21106}
}"""
HOMEPAGE = "https://huggingface.co/datasets/yonsei-dli/BESPOKE"
