"""``semantic.grad_free_returns``: which helpers of a module return values without autograd history.
The helper under test is the function named ``helper``; each case is a shape a looser reading would
take wrongly, or a stricter one would miss."""

from __future__ import annotations

import ast
import textwrap

import pytest

from gpulint.semantic.grad_free_returns import grad_free_functions
from gpulint.semantic.model import SemanticModel


def _grad_free(source: str) -> bool:
    source = "import torch\nimport torch.nn.functional as F\n" + textwrap.dedent(source)
    model = SemanticModel(ast.parse(source), source)
    return "helper" in {function.node.name for function in grad_free_functions(model)}


GRAD_FREE = {
    "a feature extractor switching gradients off after eval()": """
        def helper(net, val_loader):
            net.eval()
            feats = []
            with torch.no_grad():
                for batch, _ in val_loader:
                    feats.append(net(batch))
            return torch.cat(feats), len(feats)
    """,
    "inference mode": """
        def helper(model, images):
            with torch.inference_mode():
                embedding = model(images)
            return F.normalize(embedding, dim=1)
    """,
    "set_grad_enabled(False)": """
        def helper(model, images):
            with torch.set_grad_enabled(False):
                out = model(images)
            return out.softmax(-1)
    """,
    "a forward pass returned inside the block": """
        def helper(model, images):
            model.eval()
            with torch.no_grad():
                return model(images)
    """,
    "a decorated helper": """
        @torch.no_grad()
        def helper(model, images):
            return model(images)
    """,
    "the batches a loop over a loader draws, kept beside the outputs": """
        def helper(model, loader):
            inputs, outputs = [], []
            with torch.no_grad():
                for images, _ in loader:
                    inputs.append(images)
                    outputs.append(model(images))
            result = (torch.cat(outputs),)
            result = result + (torch.cat(inputs),)
            return result
    """,
    "detached values and Python numbers": """
        def helper(model, images):
            out = model(images)
            return out.detach().cpu(), out.argmax(-1).tolist(), float(out.sum().item())
    """,
}

CARRIES_HISTORY = {
    "a forward pass before the block": """
        def helper(model, images):
            out = model(images)
            with torch.no_grad():
                scale = out.norm()
            return out / scale
    """,
    "a flag known only at run time": """
        def helper(model, images, train):
            with torch.set_grad_enabled(train):
                out = model(images)
            return out
    """,
    "gradients switched on again inside": """
        def helper(model, images):
            with torch.no_grad():
                with torch.enable_grad():
                    out = model(images)
            return out
    """,
    "a view taken under no_grad of an output made before it": """
        def helper(model, images):
            out = model(images)
            with torch.no_grad():
                token = out[:, 0]
            return token
    """,
    "a cast that may return its receiver": """
        def helper(model, images):
            out = model(images)
            with torch.no_grad():
                same = out.float()
            return same
    """,
    "a parameter returned inside the block": """
        def helper(model, features):
            with torch.no_grad():
                return features
    """,
    "a parameter combined with an output": """
        def helper(model, images, prototype):
            with torch.no_grad():
                out = model(images)
            return out + prototype
    """,
    "a list another function fills": """
        def helper(model, images):
            features = []
            with torch.no_grad():
                features.append(model(images))
            fill(model, images, features)
            return torch.cat(features)
    """,
    "an alias of the list": """
        def helper(model, images):
            features = []
            other = features
            with torch.no_grad():
                features.append(model(images))
            other.append(model(images))
            return torch.cat(features)
    """,
    "an element filled in place": """
        def helper(model, images):
            features = [torch.zeros(1)]
            features[0].add_(model(images).sum())
            return torch.cat(features)
    """,
    "a buffer added to in place": """
        def helper(model, images):
            with torch.no_grad():
                total = model(images).sum()
            total.add_(model(images).sum())
            return total
    """,
    "a torch function writing into it": """
        def helper(model, images):
            with torch.no_grad():
                total = model(images).sum()
            torch.mul(model(images).sum(), 2, out=total)
            return total
    """,
    "a module-level list": """
        FEATURES = []

        def helper(model, images):
            with torch.no_grad():
                FEATURES.append(model(images))
            return torch.cat(FEATURES)
    """,
    "a list a nested function fills": """
        def helper(model, loader):
            features = []

            def keep(images):
                features.append(model(images))

            for images, _ in loader:
                keep(images)
            return torch.cat(features)
    """,
    "a tensor asking for gradients": """
        def helper(model, images):
            with torch.no_grad():
                out = model(images)
            scale = torch.ones(1, requires_grad=True)
            return out * scale
    """,
    "round() of a tensor": """
        def helper(model, images):
            return round(model(images))
    """,
    "the target of a loop over outputs": """
        def helper(model, outputs):
            kept = []
            with torch.no_grad():
                for out in outputs:
                    kept.append(out)
            return torch.cat(kept)
    """,
}


@pytest.mark.parametrize("source", GRAD_FREE.values(), ids=list(GRAD_FREE))
def test_grad_free(source):
    assert _grad_free(source)


@pytest.mark.parametrize("source", CARRIES_HISTORY.values(), ids=list(CARRIES_HISTORY))
def test_may_carry_history(source):
    assert not _grad_free(source)
