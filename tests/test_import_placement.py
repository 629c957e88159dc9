"""``import gc`` added by a fix lands where isort (and ruff's I001) would put it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import run_gpulint

ISORT = Path(sys.executable).parent / "isort"
BODY = (
    "\n\ndef submodule_of_the_load(model, path, train):\n"
    '    encoder = torch.load(path, map_location="cpu").roberta\n'
    "    model.roberta.load_state_dict(encoder.state_dict())\n"
    "    train(model)\n"
)


@pytest.mark.parametrize(
    "header",
    [
        "import torch\n",
        "import os\nimport sys\n\nimport torch\n",
        '"""Doc."""\nfrom __future__ import annotations\n\nimport torch\nfrom torch import nn\n',
        "import os\nfrom pathlib import Path\n\nimport numpy as np\nimport torch\n",
        "from pathlib import Path\n\nimport torch\n",
        "import argparse\nimport json\n\n# third party\nimport torch\n",
        "import argparse\nimport hashlib\nfrom pathlib import Path\n\nimport torch\n",
        "import Abc\nimport torch\n",
    ],
    ids=["third-party-only", "before-os", "after-future", "plain-before-from", "only-from", "between", "middle", "no-stdlib-capital"],
)
def test_the_added_import_is_sorted(tmp_path, header):
    (tmp_path / "t.py").write_text(header + BODY)
    isort_clean = subprocess.run([str(ISORT), "--check-only", "t.py"], cwd=tmp_path, capture_output=True)
    assert isort_clean.returncode == 0, "the input itself is sorted"
    assert run_gpulint(["--fix", "t.py"], cwd=tmp_path).returncode == 0
    fixed = (tmp_path / "t.py").read_text()
    assert "import gc\n" in fixed and "gc.collect()" in fixed
    result = subprocess.run([str(ISORT), "--check-only", "--diff", "t.py"], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout


def test_an_existing_import_is_not_repeated(tmp_path):
    (tmp_path / "t.py").write_text("import gc\n\nimport torch\n" + BODY)
    assert run_gpulint(["--fix", "t.py"], cwd=tmp_path).returncode == 0
    assert (tmp_path / "t.py").read_text().count("import gc") == 1
