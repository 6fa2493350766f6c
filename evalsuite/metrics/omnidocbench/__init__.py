"""OmniDocBench's end-to-end evaluation, as the official code of version 1.0 computes it
(opendatalab/OmniDocBench at 895837f, the version of the DeepSeek-OCR paper's Table 3), of
version 1.5 (0f22218) and of version 1.6 (9dc1dec, the default). Each version's commit and rules
are a row of :mod:`.versions`, whose ``code_base`` names the official code base that scores it:

- :mod:`.common`: what the code bases share: ground-truth categories, normalisation, markdown
  extraction primitives, the quick-match machinery, the sample model, the official aggregates
  and the CDM hook;
- :mod:`.v1_0`: v1.0's code base (v1.5 differs from v1.0 only by its row): the markdown
  extraction, the simple and hybrid matches and the page step;
- :mod:`.v1_6`: v1.6's code base, one module per official file it follows (extraction,
  normalisation, quick match, formula candidates, page step, metric step);
- :mod:`.evaluation`: a whole run of any version through its code base, its CDM and
  leaderboard overall.
"""
