import pytest

from stratamem import Level, ValidationError, can_flow_to


def test_order_and_flow():
    assert Level.PUBLIC < Level.INTERNAL < Level.CONFIDENTIAL < Level.RESTRICTED
    assert can_flow_to(Level.PUBLIC, Level.CONFIDENTIAL)
    assert can_flow_to(Level.INTERNAL, Level.INTERNAL)
    assert not can_flow_to(Level.RESTRICTED, Level.PUBLIC)


@pytest.mark.parametrize("text", ["public", "  Confidential ", "RESTRICTED", "iNtErNaL\n"])
def test_parse_any_case_and_spaces(text):
    assert Level.parse(text).name == text.strip().upper()


@pytest.mark.parametrize("text", ["", "secret", "PUBLICX", "0", None, 3])
def test_parse_refuses_and_names_valid_levels(text):
    with pytest.raises(ValidationError) as err:
        Level.parse(text)
    assert "PUBLIC, INTERNAL, CONFIDENTIAL, RESTRICTED" in str(err.value)
    assert err.value.code == "VALIDATION_ERROR"


def test_output_uses_upper_case_name():
    assert str(Level.CONFIDENTIAL) == "CONFIDENTIAL"
