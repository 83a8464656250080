"""Developer entry points run by the Makefile (`make demo`, `make airflow`)."""
