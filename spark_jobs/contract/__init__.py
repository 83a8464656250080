"""The job contract both sides share: specs, paths, errors, durations.

Importable with neither Spark nor Airflow installed-and-loaded: the DAGs, the Airflow plugin and
the Spark jobs read the same facts from here, so each fact exists once.
"""
