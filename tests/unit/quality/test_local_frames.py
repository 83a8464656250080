"""What the pandas engine hands to GX: array cells as tuples, so GX can fingerprint the batch with
pandas' row hash instead of pickling the whole frame."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from spark_jobs.quality.local import hashable_arrays

pytestmark = pytest.mark.unit


def test_array_cells_become_tuples_of_the_same_values_and_the_input_is_untouched():
    df = pd.DataFrame(
        {
            "pages": [np.array(["/a", "/b"]), None, np.array([], dtype=object), ["/c"]],
            "nested": [np.array([np.array([1, 2])], dtype=object), None, None, None],
            "n": [1, 2, 3, 4],
            "s": ["x", None, "y", "z"],
        }
    )
    with pytest.raises(TypeError):
        pd.util.hash_pandas_object(df)  # why GX falls back to pickle.dumps
    out = hashable_arrays(df)
    assert out["pages"].tolist() == [("/a", "/b"), None, (), ("/c",)]
    assert out["nested"].tolist()[0] == ((1, 2),)
    assert out[["n", "s"]].equals(df[["n", "s"]])
    assert len(pd.util.hash_pandas_object(out)) == len(df)
    assert isinstance(df["pages"].iloc[0], np.ndarray)  # the caller's frame is unchanged


def test_a_frame_without_arrays_is_handed_over_as_it_is():
    df = pd.DataFrame({"n": [1, 2], "s": ["a", None]})
    assert hashable_arrays(df) is df
