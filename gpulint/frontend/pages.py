"""The rule reference pages: ``rules/GPUxxx.md`` in a checkout, ``gpulint/_pages/`` in a wheel."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, Optional

_PACKAGE_DIR = Path(__file__).resolve().parent.parent
PAGES_URL = "https://github.com/gpulint/gpulint/blob/main/rules/"
"""Where the rule pages are published (each is ``PAGES_URL + "GPU001.md"``)."""
SECTIONS = ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety", "Measured effect", "Precision in the wild")
"""The second-level headings every page has, in this order."""


def pages_dir() -> Path:
    """Where the pages are: shipped inside the package, or beside it in a source checkout."""
    shipped = _PACKAGE_DIR / "_pages"
    return shipped if shipped.is_dir() else _PACKAGE_DIR.parent / "rules"


def page_path(code: str) -> Path:
    return pages_dir() / f"{code}.md"


def read_page(code: str) -> Optional[str]:
    try:
        return page_path(code).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def title(page: str) -> str:
    return page.splitlines()[0] if page else ""


def sections(page: str) -> Dict[str, str]:
    """Each ``## heading`` of a page mapped to the text under it."""
    parts = re.split(r"^## +(.+?) *$", page, flags=re.MULTILINE)
    return {heading: body.strip() for heading, body in zip(parts[1::2], parts[2::2])}


def code_blocks(text: str) -> list:
    """The contents of the fenced ``python`` code blocks in ``text``."""
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)
