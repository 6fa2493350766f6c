"""OmniDocBench v1.0's code base (opendatalab/OmniDocBench at 895837f), which also scores v1.5
(0f22218) through the flags of its row (:mod:`..versions`): the markdown extraction
(:mod:`.extract`), the simple and hybrid matches (:mod:`.match`) and the page step
(:mod:`.page`), on the shared core (:mod:`..common`)."""
