"""base/numeric.py: sorted_unique is np.unique for the flat NaN-free arrays the static batch's grids are."""
import numpy as np

from inferbound.base.numeric import sorted_unique


def test_sorted_unique_by_hand():
    out = sorted_unique(np.array([3.0, 1.0, 3.0, 2.0, 1.0]))
    assert out.tolist() == [1.0, 2.0, 3.0] and out.dtype == np.float64
    assert sorted_unique(np.array([[2, 2], [7, 1]])).tolist() == [1, 2, 7]   # flattened, as np.unique does
    assert sorted_unique(np.array([], dtype=float)).tolist() == []
    # the grid compute_bound_batch starts from at limit 64: round(64^(i/47)), i = 0..47, has runs of 1, 2, 3
    grid = sorted_unique(np.round(np.geomspace(1, 64, 48)))
    assert grid[:4].tolist() == [1.0, 2.0, 3.0, 4.0] and grid[-1] == 64.0 and np.all(np.diff(grid) > 0)


def test_sorted_unique_equals_numpy_unique():
    rng = np.random.default_rng(0)
    for x in (np.round(np.geomspace(1, 65536, 48)), np.linspace(1, 255, 64).round(),
              rng.integers(0, 9, 200).astype(float), np.array([1.5, 0.5, 0.5])):
        want = np.unique(x)
        got = sorted_unique(x)
        assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
    nan = np.array([np.nan, 1.0, np.nan])
    assert np.array_equal(sorted_unique(nan), np.unique(nan), equal_nan=True)   # NaN: numpy's rule
