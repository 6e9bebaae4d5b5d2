"""The release check (.ci/check_release.py): a tag that does not match ``__version__``, or a
version without a dated CHANGELOG section, fails before anything is built."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import llama_index_graphrag_milvus

ROOT = Path(__file__).resolve().parent.parent
CHECK = ROOT / ".ci" / "check_release.py"


def run_check(tag: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(CHECK), tag], capture_output=True, text=True,
                          check=False)


def test_the_current_version_can_be_released() -> None:
    result = run_check(f"v{llama_index_graphrag_milvus.__version__}")
    assert result.returncode == 0, result.stderr
    assert "matches __version__ and CHANGELOG.md" in result.stdout


@pytest.mark.parametrize("tag", ["v9.9.9", "0.1.0", "refs/tags/v0.0.1"])
def test_a_tag_that_is_not_the_version_fails(tag: str) -> None:
    result = run_check(tag)
    assert result.returncode == 1
    assert "does not match __version__" in result.stderr


def test_a_version_without_a_dated_changelog_section_fails(tmp_path: Path) -> None:
    sys.path.insert(0, str(CHECK.parent))
    try:
        import check_release
    finally:
        sys.path.remove(str(CHECK.parent))
    assert check_release.release_problems("v0.2.0", "0.2.0", "## [Unreleased]\n") == [
        'CHANGELOG.md has no dated section "## [0.2.0] - YYYY-MM-DD"']
    assert check_release.release_problems(
        "v0.2.0", "0.2.0", "## [0.2.0] - 2026-12-01\n### Added\n") == []
    # an undated section is not a release section
    assert check_release.release_problems("v0.2.0", "0.2.0", "## [0.2.0]\n") != []
