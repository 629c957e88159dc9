"""How code names batches of data and the loaders that draw them: ``train_loader``,
``enumerate(tqdm(dataloader))``, ``self.val_data``, ``var_loader1``. A loop over such a name draws
batches, which hold data without autograd history (read by GPU005 and by
:mod:`gpulint.semantic.grad_free_returns`)."""

from __future__ import annotations

import re
from typing import Set

BATCH_WORDS = frozenset({
    "loader", "loaders", "dataloader", "dataloaders", "batch", "batches", "data", "dataset", "datasets",
    "ds", "dl", "iterator", "samples", "examples", "episodes", "minibatches",
})
"""Words in the iterable of a loop that draws batches (``train_loader``, ``enumerate(tqdm(dataloader))``,
``self.val_data``); a loop over layers, heads, scales, crops or a ``range`` is not one."""
BATCH_WORD_SPLIT = re.compile(r"_+|(?<=[a-z0-9])(?=[A-Z])")
DIGITS = "0123456789"


def name_words(name: str) -> Set[str]:
    """The words of a name, lowercase and without a trailing number (``var_loader1``: ``var``,
    ``loader``); a word that ends in ``loader`` runs two words together (``trainloader``: also
    ``loader``; not ``downloader`` or ``uploader``, which move files)."""
    words = {word.lower().rstrip(DIGITS) for part in name.split(".") for word in BATCH_WORD_SPLIT.split(part) if word}
    return words | {
        suffix for word in words for suffix in ("loader", "loaders")
        if word.endswith(suffix) and word != suffix and not word.endswith(("down" + suffix, "up" + suffix))
    }
