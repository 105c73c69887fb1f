"""The shared validators: what counts as a finite number."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.domain.validation import InvalidArgument, require_finite


@pytest.mark.parametrize("value", [np.float32(0.5), np.float64(0.5), np.int64(2), Fraction(1, 2), 3, 0.25])
def test_any_real_number_type_is_accepted_and_returned_as_a_float(value) -> None:  # type: ignore[no-untyped-def]
    out = require_finite(value, "p")
    assert type(out) is float and out == float(value)


@pytest.mark.parametrize("value", [True, np.bool_(True), "0.5", None, 1j, np.float32("nan"), math.inf, -0.5])
def test_bools_strings_complex_non_finite_and_negative_values_are_refused(value) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidArgument, match="'p'|p must"):
        require_finite(value, "p")


@given(st.floats(allow_nan=True, allow_infinity=True, width=32))
def test_a_float32_is_accepted_exactly_when_it_is_finite_and_non_negative(x: float) -> None:
    value = np.float32(x)
    if math.isfinite(x) and x >= 0:
        assert require_finite(value, "p") == float(value)
    else:
        with pytest.raises(InvalidArgument):
            require_finite(value, "p")
