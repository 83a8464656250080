"""Pure state-transition logic per job: (key, new events, previous state, time) -> (outputs,
new state, timeout). Plain Python, no Spark import: unit-tested without a JVM, and driven by any
executor (per-key applyInPandasWithState, transformWithStateInPandas, or a batched executor).

Times are integer epoch milliseconds throughout.
"""
