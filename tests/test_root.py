"""The package root: what users need, and the names of 0.1.0 that moved to their modules."""

from __future__ import annotations

import importlib

import pytest

import llama_index_graphrag_milvus as package


def test_the_root_is_what_a_user_needs() -> None:
    assert 15 <= len(package.__all__) <= 25
    for name in package.__all__:
        assert getattr(package, name) is not None


@pytest.mark.parametrize("name", sorted(package.MOVED))
def test_a_name_of_0_1_0_still_imports_from_the_root_with_a_warning(name: str) -> None:
    home = importlib.import_module(package.MOVED[name])
    with pytest.warns(DeprecationWarning, match=f"import it from {package.MOVED[name]}"):
        moved = getattr(package, name)
    assert moved is getattr(home, name)
    assert name not in package.__all__


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'Tripplet'"):
        package.Tripplet  # noqa: B018
