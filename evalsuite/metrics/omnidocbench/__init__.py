"""OmniDocBench's end-to-end evaluation, as the official code of version 1.0 computes it
(opendatalab/OmniDocBench at 895837f, the version of the DeepSeek-OCR paper's Table 3), of
version 1.5 (0f22218) and of version 1.6 (9dc1dec, the default). Each version's commit and rules
are a row of :mod:`.versions`; v1.5 differs from v1.0 only there, v1.6 has its own page and
metric steps (the ``v16_*`` modules, named after the official files they follow).

- :mod:`.normalize`: the official normalisation of text, display formulas and tables;
- :mod:`.extract`: splitting a markdown prediction into elements;
- :mod:`.match`: matching predicted to ground-truth elements (v1.0's simple and quick match,
  v1.5's hybrid match);
- :mod:`.page`: one page's matched samples and their metric values;
- :mod:`.summary`: the official aggregates (``all``, per attribute, per page, overall);
- :mod:`.formula_cdm`: the CDM hook each version's evaluation takes;
- :mod:`.mgam`: v1.6's quick match of text and formula lines;
- ``v16_extract``, ``v16_normalize``, ``v16_split``, ``v16_formula_pool``,
  ``v16_formula_match``, ``v16_tables``, ``v16_quick``, ``v16_page``, ``v16_summary``,
  ``v16_cdm_variants``: v1.6's steps;
- :mod:`.evaluation`: a whole run of any version, its CDM and leaderboard overall.
"""
