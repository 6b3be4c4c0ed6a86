"""Property: no argument dict (or non-dict) makes ``execute`` raise, and every answer is well formed."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tools_support import new_store

from stratamem.tools import TOOLS, execute

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
PARAM_NAMES = sorted(
    {p.name for spec in TOOLS.values() for p in spec.params}
    | {"classification", "level", "agent_id", "agent"}
)
argument_dicts = st.dictionaries(
    st.one_of(st.sampled_from(PARAM_NAMES), st.text(max_size=10)), json_values, max_size=6
)
anything = st.one_of(argument_dicts, json_values)

STORE = new_store()
SESSION = STORE.session(agent_id="fuzz")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(TOOLS)), arguments=anything)
def test_execute_never_raises(name, arguments):
    text = execute(SESSION, name, arguments)
    assert isinstance(text, str)
    text.encode("utf-8")
    if text.startswith("{"):
        data = json.loads(text)
        if "error" in data:
            assert set(data) == {"error"}
            assert data["error"]["code"] in {
                "VALIDATION_ERROR",
                "NOT_FOUND",
                "POLICY_BLOCKED",
                "STORAGE_ERROR",
            }
            assert data["error"]["code"] != "STORAGE_ERROR", data
            assert isinstance(data["error"]["message"], str) and data["error"]["message"]
