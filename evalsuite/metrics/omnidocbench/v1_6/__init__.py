"""OmniDocBench v1.6's code base (opendatalab/OmniDocBench at 9dc1dec), one module per step,
named after the official files: the markdown extraction (:mod:`.extract`,
:mod:`.extract_formulas`), the normalisation (:mod:`.normalize`, :mod:`.tables`), the
equation-array splits (:mod:`.split`), the quick and simple matches (:mod:`.mgam`,
:mod:`.quick`), the display-formula candidates (:mod:`.formula_pool`, :mod:`.formula_match`,
:mod:`.cdm_variants`), the page step (:mod:`.page`) and the metric step (:mod:`.summary`), on
the shared core (:mod:`..common`)."""
