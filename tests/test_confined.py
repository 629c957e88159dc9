"""``semantic.confined``: whether what a loop computes is seen after it. The loop under test is the
one whose header ends with ``# here``."""

from __future__ import annotations

import ast
import textwrap

import pytest

from gpulint.semantic.confined import stays_inside
from gpulint.semantic.model import SemanticModel


def _stays(source: str) -> bool:
    source = textwrap.dedent(source)
    tree = ast.parse(source)
    line = next(number for number, text in enumerate(source.splitlines(), 1) if text.rstrip().endswith("# here"))
    loop = next(node for node in ast.walk(tree) if isinstance(node, (ast.For, ast.While)) and node.lineno == line)
    return stays_inside(SemanticModel(tree, source), loop)


STAYS = {
    "the last output read after it only for its values": """
        def f(valid, writer):
            for x in valid:  # here
                out = net(x)
            writer.add_scalar("out", out[0].cpu().data.numpy().mean())
            print(out.shape, out > 0)
    """,
    "a total read through a method that keeps history, then detached": """
        def f(valid):
            total = 0
            for x in valid:  # here
                total += net(x).mean()
            return total.cpu().data.numpy()
    """,
    "parts summed into a numpy array": """
        import numpy as np

        def f(valid):
            parts = np.zeros(2)
            for x in valid:  # here
                loss, numbers = split(net(x))
                parts += numbers
            return parts
    """,
    "given to a method that stores it where it is read only detached": """
        class Runner:
            def score(self, out):
                self.last = out
                return torch.add(out, 1)

            def f(self, valid):
                for x in valid:  # here
                    self.score(net(x))
                print(self.last.cpu().data)
    """,
    "rebound by the next turn's training step": """
        def f(batches, valid):
            for x in batches:
                out = net(x)
                out.sum().backward()
                for x in valid:  # here
                    out = net(x)
    """,
    "read only as a Python number": """
        def f(valid):
            total = 0.0
            for x in valid:  # here
                total += net(x).sum().item()
            print(total)
    """,
    "numbers and masks collected": """
        def f(valid):
            hits, losses = [], []
            for x, y in valid:  # here
                out = net(x)
                losses.append(float(out.mean()))
                hits.append((out.argmax(-1) == y).sum())
            return hits, losses
    """,
    "a name read in the other branch of an if": """
        def f(valid, flag):
            if flag:
                for x in valid:  # here
                    out = net(x)
            else:
                print(out)
    """,
    "a container the loop makes and drops": """
        def f(valid):
            for x in valid:  # here
                kept = []
                kept.append(net(x))
                print(len(kept))
    """,
    "read before the loop only": """
        def f(valid, out):
            print(out)
            for x in valid:  # here
                out = net(x)
    """,
    "a helper of the module that keeps nothing": """
        def accuracy(output, target):
            return (output.argmax(-1) == target).float().mean().item()
        def f(valid):
            scores = []
            for v, y in valid:  # here
                scores.append(accuracy(net(v), y))
            return scores
    """,
    "batches from a generator of the module": """
        def batches(data, size):
            for start in range(0, len(data), size):
                yield data[start:start + size]
        def f(valid):
            for v in batches(valid, 8):  # here
                print(net(v).mean().item())
    """,
    "labels of a DataLoader's batches kept after it": """
        from torch.utils.data import DataLoader

        def f(root, kept):
            dataset = ImageFolder(root)
            loader = DataLoader(dataset, batch_size=8)
            for i, (x, labels) in enumerate(loader):  # here
                out = net(x)
                kept.append(labels.reshape(-1))
    """,
    "a helper's count bound by a conditional expression, kept after it": """
        def rightness(predictions, labels):
            rights = predictions.data.argmax(1).eq(labels).sum()
            rights = rights.cpu() if rights.is_cuda else rights
            return rights, len(labels)

        def f(valid, kept):
            for x, y in valid:  # here
                kept.append(rightness(net(x), y))
    """,
    "rebound in both branches of an if before it is read": """
        def f(batches, valid, dice):
            for x, y in batches:
                for v in valid:  # here
                    loss = crit(net(v), y)
                if dice:
                    loss = crit(net(x), y) + dice(net(x), y)
                else:
                    loss = crit(net(x), y)
                loss.backward()
    """,
    "a name rebound by a with statement": """
        def f(valid):
            for x in valid:  # here
                out = net(x)
            with open("log") as out:
                print(out)
    """,
}

SEEN = {
    "labels of a TensorDataset's batches kept after it": """
        from torch.utils.data import DataLoader, TensorDataset

        def f(features, targets, kept):
            loader = DataLoader(TensorDataset(features, targets), batch_size=8)
            for x, labels in loader:  # here
                out = net(x)
                kept.append(labels.reshape(-1))
    """,
    "a helper's output returned by one branch of a conditional expression": """
        def scored(predictions, labels, raw):
            return predictions if raw else predictions.argmax(1).eq(labels).sum()

        def f(valid, kept):
            for x, y in valid:  # here
                kept.append(scored(net(x), y, False))
    """,
    "rebound in one branch of an if only before it is read": """
        def f(batches, valid, dice):
            for x, y in batches:
                for v in valid:  # here
                    loss = crit(net(v), y)
                if dice:
                    loss = crit(net(x), y) + dice(net(x), y)
                loss.backward()
    """,
    "given to a method that stores it where it is read with history": """
        class Runner:
            def score(self, out):
                self.last = out
                return torch.add(out, 1)

            def f(self, valid):
                for x in valid:  # here
                    self.score(net(x))
                keep(self.last.cpu())
    """,
    "parts summed into a tensor": """
        def f(valid):
            parts = torch.zeros(2)
            for x in valid:  # here
                loss, numbers = split(net(x))
                parts += numbers
            return parts
    """,
    "the last output handed on after it": """
        def f(valid):
            for x in valid:  # here
                out = net(x)
            keep(out[0].cpu())
    """,
    "read after the loop": """
        def f(valid):
            for x in valid:  # here
                out = net(x)
            return out
    """,
    "read at the top of the next turn": """
        def f(batches, valid):
            out = 0.0
            for x in batches:
                (net(x).sum() + out).backward()
                for v in valid:  # here
                    out = net(v).mean()
    """,
    "a container the loop makes, read by the next turn": """
        def f(batches, valid):
            for x in batches:
                for v in valid:  # here
                    kept = []
                    kept.append(net(v))
                (net(x).sum() + kept[0].mean()).backward()
    """,
    "stored through an alias of self": """
        def f(self, valid):
            for v in valid:  # here
                s = self
                s.anchor = net(v)
    """,
    "added in place to a list it was given": """
        def f(valid, kept):
            for v in valid:  # here
                kept += [net(v)]
    """,
    "stored by setattr": """
        def f(self, valid):
            for v in valid:  # here
                setattr(self, "last", net(v))
    """,
    "pushed on a heap": """
        import heapq
        def f(valid, heap):
            for v in valid:  # here
                heapq.heappush(heap, net(v))
    """,
    "added in place to a tensor": """
        def f(valid, acc):
            for v in valid:  # here
                acc.add_(net(v))
    """,
    "kept by a helper of the module": """
        last = None
        def keep(value):
            global last
            last = value
        def f(valid):
            for v in valid:  # here
                keep(net(v))
    """,
    "given to a class of the module, whose instance a shelf keeps": """
        class Box:
            def __init__(self, value, shelf):
                self.value = value
                shelf.append(self)
        def f(valid, shelf):
            for v in valid:  # here
                Box(net(v), shelf)
    """,
    "a match capture": """
        def f(valid):
            for v in valid:  # here
                match net(v):
                    case out:
                        pass
            return out
    """,
    "abs keeps history": """
        def f(valid, kept):
            for v in valid:  # here
                kept.append(abs(net(v)))
    """,
    "read by a generator made before it": """
        def f(valid):
            out = 0
            later = (out * k for k in range(3))
            for v in valid:  # here
                out = net(v)
            return sum(later)
    """,
    "raised with an output": """
        def f(valid):
            for v in valid:  # here
                raise ValueError(net(v))
    """,
    "an attribute as a loop target": """
        def f(self, valid):
            for v in valid:  # here
                for self.last in [net(v)]:
                    pass
    """,
    "a loop in a class body": """
        class Probe:
            for v in valid:  # here
                out = v
    """,
    "read in the test of a while loop around it": """
        def f(valid):
            gap = 1.0
            while keep_going(gap):
                for v in valid:  # here
                    gap = net(v).mean()
    """,
    "bound again only on one branch": """
        def f(valid, flag):
            for x in valid:  # here
                out = net(x)
            if flag:
                out = None
            keep(out)
    """,
    "read by a nested function": """
        def f(valid):
            for x in valid:  # here
                out = net(x)
            return lambda: out
    """,
    "read by a function defined before it": """
        def f(valid):
            def show():
                print(out)
            for x in valid:  # here
                out = net(x)
            show()
    """,
    "read by a lambda made before it": """
        def f(valid):
            show = lambda: print(out)
            for x in valid:  # here
                out = net(x)
            show()
    """,
    "appended to an outer list": """
        def f(valid):
            kept = []
            for x in valid:  # here
                kept.append(net(x))
    """,
    "stored in an attribute": """
        def f(self, valid):
            for x in valid:  # here
                self.last = net(x)
    """,
    "a global": """
        def f(valid):
            global out
            for x in valid:  # here
                out = net(x)
    """,
    "returned from inside": """
        def f(valid):
            for x in valid:  # here
                return net(x)
    """,
    "yielded": """
        def f(valid):
            for x in valid:  # here
                yield net(x)
    """,
    "read in a handler of a try around it": """
        def f(valid):
            try:
                for x in valid:  # here
                    out = net(x)
            except ValueError:
                keep(out)
    """,
}


@pytest.mark.parametrize("source", list(STAYS.values()), ids=list(STAYS))
def test_values_that_stay_inside(source):
    assert _stays(source)


@pytest.mark.parametrize("source", list(SEEN.values()), ids=list(SEEN))
def test_values_seen_after_the_loop(source):
    assert not _stays(source)


def test_the_fix_of_a_loop_in_code_that_trains_keeps_no_grad_where_inference_mode_is_preferred():
    """An inference tensor (a mask, an index) that the loop leaves for the next training step could
    not be saved for backward: the loop fix uses ``torch.no_grad()`` whatever the preference, the
    fix of an inference-only function ``torch.inference_mode()`` as preferred."""
    from gpulint.engine.fixer import applicabilities, fix_text
    from gpulint.engine.linter import lint_source
    from gpulint.rules import ALL_RULES

    rule = [r for r in ALL_RULES if r.code == "GPU004"]
    source = textwrap.dedent("""
        import torch

        def fit(net, batches, probes, criterion, optimizer):
            for x, y in batches:
                criterion(net(x), y).backward()
                optimizer.step()
                net.eval()
                for probe in probes:
                    print(net(probe).argmax(-1).tolist())
                net.train()

        def predict(net, batch):
            net.eval()
            return net(batch).argmax(-1).tolist()
    """)
    options = {"prefer-inference-mode": True}
    lint = lambda text: lint_source(text, "fit.py", rule, options=options)  # noqa: E731
    fixed = fix_text(source, lint, applicabilities(True)).text
    assert "with torch.no_grad():\n            for probe in probes:" in fixed
    assert "@torch.inference_mode()\ndef predict" in fixed
