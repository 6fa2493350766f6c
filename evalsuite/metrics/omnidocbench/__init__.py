"""OmniDocBench's end-to-end evaluation, as the official code of version 1.0 computes it
(opendatalab/OmniDocBench at 895837f, the version of the DeepSeek-OCR paper's Table 3) and of
version 1.5 (0f22218); what differs between them is data (:mod:`.versions`).

- :mod:`.normalize`: the official normalisation of text, display formulas and tables;
- :mod:`.extract`: splitting a markdown prediction into elements;
- :mod:`.match`: matching predicted to ground-truth elements;
- :mod:`.page`: one page's matched samples and their metric values;
- :mod:`.summary`: the official aggregates (``all``, per attribute, per page, overall);
- :mod:`.evaluation`: a whole run, the v1.5 CDM hook and leaderboard overall.
"""
