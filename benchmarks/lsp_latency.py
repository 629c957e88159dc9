"""Language server latency: the time from ``textDocument/didChange`` to the ``publishDiagnostics``
that answers it, on a training script of about 2,000 lines, warm (after a few changes), with the
server's default debounce; each change sends the whole document, as the server asks, after the
diagnostics of the one before arrived. The changes take turns: a comment appended to a line, a
number in a line changed, a statement inserted as a new line, each at another place in the script
and on the text the last one left. Prints the median and the 95th percentile (and each kind's
median), and writes them as JSON.

    python benchmarks/lsp_latency.py [--script FILE] [--changes 60] [--output results/lsp-latency.json]

Without ``--script`` the script is generated: the shapes of real training code (checkpoint save and
resume, then many models with their training and evaluation loops, and a ``main``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path

TEMPLATE = '''

class Block{index}(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width))

    def forward(self, x):
        return self.layers(x) + x


def train_epoch_{index}(model, loader, optimizer, criterion, device):
    model.train()
    total = 0.0
    for step, (inputs, targets) in enumerate(loader):
        inputs, targets = inputs.to(device), targets.to(device)
        optimizer.zero_grad()
        outputs = model(inputs)
        loss = criterion(outputs, targets)
        loss.backward()
        optimizer.step()
        total += loss.item()
        if step % 100 == 0:
            print(f"step {{step}}: {{loss.item():.4f}}")
    return total / max(1, len(loader))


def evaluate_{index}(model, loader, device):
    model.eval()
    correct = 0
    with torch.no_grad():
        for inputs, targets in loader:
            outputs = model(inputs.to(device))
            correct += (outputs.argmax(1) == targets.to(device)).sum().item()
    return correct / len(loader.dataset)
'''
HEADER = '''import argparse

import torch
from torch import nn


def save(model, optimizer, epoch, path):
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}, path)


def resume(model, optimizer, path):
    checkpoint = torch.load(path)
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    return checkpoint["epoch"]
'''
FOOTER = '''

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--resume")
    args = parser.parse_args()
    device = "cuda"
    model = Block0(512).to(device)
    optimizer = torch.optim.AdamW(model.parameters())
    criterion = nn.MSELoss()
    start = resume(model, optimizer, args.resume) if args.resume else 0
    for epoch in range(start, 10):
        train_epoch_0(model, [], optimizer, criterion, device)
        save(model, optimizer, epoch, f"epoch{epoch}.pt")


if __name__ == "__main__":
    main()
'''


def training_script(lines: int) -> str:
    parts = [HEADER]
    index = 0
    while sum(part.count("\n") for part in parts) + FOOTER.count("\n") < lines:
        parts.append(TEMPLATE.format(index=index))
        index += 1
    return "".join(parts) + FOOTER


EDITS = ("comment", "code", "new line")
"""The edits made in turn, each at another line of the script, each on the text the last one left:
a comment appended to a line, a number in a line changed, a statement inserted as a new line."""
STATEMENT = re.compile(r"^(\s*)(?!(?:else|elif|except|finally|case)\b)[a-z_][\w.]*[ (=.\[]")
NUMBER = re.compile(r"\d+(?=\D*$)")


def edit(lines: List[str], kind: str, version: int) -> List[str]:
    """``lines`` after the edit ``kind`` at a line chosen by ``version`` (spread over the script)."""
    def chosen(fits: Callable[[str], bool]) -> int:
        start = version * 7919 % len(lines)
        return next(index % len(lines) for index in range(start, start + len(lines)) if fits(lines[index % len(lines)]))

    if kind == "comment":
        at = chosen(lambda line: STATEMENT.match(line) is not None and "#" not in line and line.endswith("\n"))
        return lines[:at] + [lines[at][:-1] + f"  # edit {version}\n"] + lines[at + 1:]
    if kind == "code":
        at = chosen(lambda line: STATEMENT.match(line) is not None and NUMBER.search(line) is not None)
        return lines[:at] + [NUMBER.sub(str(version), lines[at])] + lines[at + 1:]
    at = chosen(lambda line: STATEMENT.match(line) is not None)
    indent = STATEMENT.match(lines[at]).group(1)  # type: ignore[union-attr]
    return lines[:at] + [f'{indent}print("edit {version}")\n'] + lines[at:]


async def measure(script: Path, changes: int, warmup: int) -> Dict[str, List[float]]:
    client = LanguageClient("gpulint-latency", "1")
    arrivals: List[float] = []

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
        arrivals.append(time.perf_counter())

    async def next_arrival(count: int) -> float:
        """When the ``count``-th diagnostics arrived (the arrival is timed by the handler)."""
        deadline = time.perf_counter() + 60
        while len(arrivals) < count:
            if time.perf_counter() > deadline:
                raise RuntimeError("the server published no diagnostics within 60 s")
            await asyncio.sleep(0.001)
        return arrivals[count - 1]

    await client.start_io(sys.executable, "-m", "gpulint", "server")
    await client.initialize_async(types.InitializeParams(capabilities=types.ClientCapabilities()))
    client.initialized(types.InitializedParams())
    text = script.read_text()
    uri = from_fs_path(str(script)) or ""
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text),
    ))
    await next_arrival(1)
    lines = text.splitlines(keepends=True)
    samples: Dict[str, List[float]] = {kind: [] for kind in EDITS}
    for version in range(2, 2 + warmup + changes):
        kind = EDITS[version % len(EDITS)]
        lines = edit(lines, kind, version)
        started = time.perf_counter()
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text="".join(lines))],
        ))
        finished = await next_arrival(version)
        if version >= 2 + warmup:
            samples[kind].append(finished - started)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--script", type=Path, help="a Python file to edit (default: a generated training script)")
    parser.add_argument("--lines", type=int, default=2000, help="length of the generated script")
    parser.add_argument("--changes", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "train.py"
        script.write_text(args.script.read_text() if args.script else training_script(args.lines))
        line_count = script.read_text().count("\n")
        by_kind = asyncio.run(measure(script, args.changes, args.warmup))
    samples = [sample for kind in EDITS for sample in by_kind[kind]]
    ordered = sorted(samples)
    median = statistics.median(ordered)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    print(f"{line_count} lines, {len(samples)} changes: median {median * 1000:.0f} ms, 95th percentile {p95 * 1000:.0f} ms")
    for kind in EDITS:
        print(f"  {kind}: median {statistics.median(by_kind[kind]) * 1000:.0f} ms over {len(by_kind[kind])} changes")
    if args.output:
        args.output.write_text(json.dumps({
            "script": str(args.script) if args.script else f"generated training script ({args.lines} lines)",
            "lines": line_count,
            "changes": len(samples),
            "warmup_changes": args.warmup,
            "median_ms": round(median * 1000, 1),
            "p95_ms": round(p95 * 1000, 1),
            "median_ms_by_edit": {kind: round(statistics.median(by_kind[kind]) * 1000, 1) for kind in EDITS},
            "machine": {"python": platform.python_version(), "cores": os.cpu_count(), "platform": platform.platform()},
        }, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
