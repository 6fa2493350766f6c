"""What the CDM versions share: the token matcher (:mod:`.matching`), the colouring rules and
their algorithm (:mod:`.colouring`), rendering with pdflatex and Ghostscript (:mod:`.render`,
:mod:`.batch`, :mod:`.preamble_format`, :mod:`.png_fast_write`), the programs needed
(:mod:`.toolchain`) and a version's row (:mod:`.version`)."""
