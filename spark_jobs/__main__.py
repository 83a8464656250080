"""``python -m spark_jobs ...``; also the application file spark-submit runs."""

import sys

from spark_jobs.cli import main

if __name__ == "__main__":
    sys.exit(main())
