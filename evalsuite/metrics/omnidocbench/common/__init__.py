"""What OmniDocBench's official code bases (:mod:`..v1_0`, :mod:`..v1_6`) share here: the
ground-truth categories and truncated-block merge (:mod:`.ground_truth`), the normalisation of
text, formulas and tables (:mod:`.normalize`), the markdown-extraction primitives
(:mod:`.extract`), the quick-match machinery (:mod:`.match`), the sample model
(:mod:`.sample`), the official aggregates (:mod:`.summary`) and the CDM hook
(:mod:`.formula_cdm`)."""
