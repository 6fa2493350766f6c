"""The tests' one conftest. ``tests/`` mirrors ``evalsuite/`` (``tests/metrics/omnidocbench/
v1_6/test_page.py`` tests ``evalsuite/metrics/omnidocbench/v1_6/page.py``); what several test
modules share (fake servers, synthetic pages, subprocess runs, paths) is ``tests/support/``;
``tests/fixtures/`` holds the committed reference sets and their generators (``gen_*.py``).
``tests/vllm`` and ``tests/vllm_cpu`` run in their own environments with their own pytest.ini.

pytest's plugin and fixtures for the benchmarks come from :mod:`evalsuite.pytest_plugin`
(the repository's ``conftest.py``)."""

import pytest

# the support modules' asserts report their operands as the tests' own do
pytest.register_assert_rewrite("tests.support")
