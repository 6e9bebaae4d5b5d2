"""Check a release tag before anything is built or uploaded.

Usage: python .ci/check_release.py v0.1.0

Fails (exit 1, with the reason) unless the tag is ``v`` + the package's ``__version__`` and
CHANGELOG.md has a dated section for that version (``## [0.1.0] - 2026-11-23``).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def package_version(init_file: Path) -> str:
    match = re.search(r'^__version__ = "([^"]+)"', init_file.read_text(), re.MULTILINE)
    if match is None:
        raise ValueError(f"no __version__ = \"...\" line in {init_file}")
    return match.group(1)


def release_problems(tag: str, version: str, changelog: str) -> list[str]:
    """What is wrong with releasing ``tag`` (empty when nothing is).

    >>> release_problems("v0.1.0", "0.1.0", "## [0.1.0] - 2026-11-23\\n- first")
    []
    >>> release_problems("v0.2.0", "0.1.0", "## [Unreleased]")  # doctest: +NORMALIZE_WHITESPACE
    ['tag v0.2.0 does not match __version__ 0.1.0 (expected tag v0.1.0)',
     'CHANGELOG.md has no dated section "## [0.1.0] - YYYY-MM-DD"']
    """
    problems = []
    if tag != f"v{version}":
        problems.append(f"tag {tag} does not match __version__ {version} "
                        f"(expected tag v{version})")
    section = re.compile(rf"^## \[{re.escape(version)}\] - \d{{4}}-\d{{2}}-\d{{2}}\s*$",
                         re.MULTILINE)
    if not section.search(changelog):
        problems.append(f'CHANGELOG.md has no dated section "## [{version}] - YYYY-MM-DD"')
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    tag = argv[1].removeprefix("refs/tags/")
    version = package_version(ROOT / "llama_index_graphrag_milvus" / "__init__.py")
    problems = release_problems(tag, version, (ROOT / "CHANGELOG.md").read_text())
    for problem in problems:
        print(f"release check: {problem}", file=sys.stderr)
    if not problems:
        print(f"release check: tag {tag} matches __version__ and CHANGELOG.md")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
