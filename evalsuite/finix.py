"""``python -m evalsuite.finix``: ``evalsuite finix`` (:mod:`evalsuite.commands.finix`) on its
own, a drop-in for FinixDocBench's ``run_eval.py``::

    python -m evalsuite.finix --gt_dir G --pred_dir P --output_json out.json [--allow_name_mismatch]
"""

import sys

from evalsuite.commands.finix import main

if __name__ == "__main__":
    sys.exit(main())
