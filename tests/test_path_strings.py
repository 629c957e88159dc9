"""The strings a path expression may be, as the code spells them (``semantic.path_strings``), and
the published files they name (``semantic.published``)."""

from __future__ import annotations

import ast
import textwrap

from gpulint.semantic.model import SemanticModel
from gpulint.semantic.path_strings import UNKNOWN, path_strings
from gpulint.semantic.published import names_a_published_file


def _last_value(source: str):
    source = textwrap.dedent(source)
    tree = ast.parse(source)
    model = SemanticModel(tree, source)
    last = tree.body[-1]
    assert isinstance(last, ast.Assign)
    return model, last.value


def _strings(source: str) -> set:
    model, value = _last_value(source)
    return set(path_strings(model, value))


def test_names_joins_and_concatenations_are_followed_to_every_assignment():
    assert _strings(
        """
        import os
        folder = "model_zoo"
        if flag:
            name = "a"
        else:
            name = "b"
        path = os.path.join(folder, name + ".pth")
        """
    ) == {"model_zoo/a.pth", "model_zoo/b.pth"}


def test_what_the_code_does_not_spell_is_unknown():
    assert _strings(
        """
        import os, sys
        path = os.path.join(sys.argv[1], f"{sys.argv[2]}-best.pth")
        """
    ) == {f"{UNKNOWN}-best.pth"}, "a joined part that starts unknown may be absolute: what comes before it is dropped"


def test_formats_leave_their_fields_unknown():
    assert _strings('path = "zoo/{}_{:02d}.pth".format(a, b)') == {f"zoo/{UNKNOWN}_{UNKNOWN}.pth"}
    assert _strings('path = "zoo/%s_%03d.pth" % (a, b)') == {f"zoo/{UNKNOWN}_{UNKNOWN}.pth"}


def test_an_argument_is_its_one_declarations_default():
    source = textwrap.dedent(
        """
        import argparse
        parser = argparse.ArgumentParser()
        parser.add_argument("--model-pool", default="model_zoo")
        args = parser.parse_args()
        path = args.model_pool + "/x.pth"
        """
    )
    assert _strings(source) == {"model_zoo/x.pth"}
    twice = source.replace('args = parser', 'parser.add_argument("--model_pool", default="runs")\nargs = parser')
    assert _strings(twice) == {f"{UNKNOWN}/x.pth"}


def test_arguments_returned_by_a_helper_of_the_module_are_its_defaults():
    source = textwrap.dedent(
        """
        import argparse
        def parse_args():
            parser = argparse.ArgumentParser()
            parser.add_argument("--model_file", default="weights/resnet18-f37072fd.pth")
            options = parser.parse_args()
            return options
        args = parse_args()
        path = args.model_file
        """
    )
    assert _strings(source) == {"weights/resnet18-f37072fd.pth"}
    assert _strings(source.replace("return options", "return options if flag else fallback")) == {UNKNOWN}
    assert _strings(source.replace("return options", "options = other\n    return options")) == {UNKNOWN}
    assert _strings(source.replace("args = parse_args()", "args = parse_args(sys.argv)")) == {UNKNOWN}
    assert _strings(source.replace("def parse_args", "@cache\ndef parse_args")) == {UNKNOWN}


def test_looking_a_model_up_by_name_sets_no_attribute():
    source = textwrap.dedent(
        """
        import argparse
        import torchvision.models as models
        parser = argparse.ArgumentParser()
        parser.add_argument("--arch", default="resnet18")
        parser.add_argument("--weights", default="weights/resnet18-f37072fd.pth")
        args = parser.parse_args()
        model = models.__dict__[args.arch]()
        path = args.weights
        """
    )
    assert _strings(source) == {"weights/resnet18-f37072fd.pth"}
    assert _strings(source.replace("model = models.__dict__[args.arch]()", "vars(args)['weights'] = 'runs/last.pth'")) == {UNKNOWN}
    assert _strings(source.replace("model = models.__dict__[args.arch]()", "args.__dict__.update(other)")) == {UNKNOWN}
    assert _strings(source.replace("model = models.__dict__[args.arch]()", "args.__dict__['weights'] = 'runs/last.pth'")) == {UNKNOWN}
    assert _strings(source.replace("model = models.__dict__[args.arch]()", "model = vars(models)[args.arch]()")) == {
        "weights/resnet18-f37072fd.pth"
    }


def test_a_name_extended_in_place_may_be_anything():
    source = """
        path = "model_zoo/x"
        path += "/../../runs/x.pth"
        path2 = path
        """
    assert _strings(source) == {"model_zoo/x", UNKNOWN}
    assert not names_a_published_file(*_last_value(source))


def test_a_parameter_is_what_every_call_passes():
    assert _strings(
        """
        def load(path="model_zoo/default.pth"):
            return path
        load("model_zoo/a.pth")
        load()
        value = load.__name__
        """
    ) == {UNKNOWN}
    model, _ = _last_value(
        """
        def load(path="model_zoo/default.pth"):
            return path
        load("model_zoo/a.pth")
        load()
        value = 0
        """
    )
    parameter = next(n for n in ast.walk(model.tree) if isinstance(n, ast.Return)).value
    assert set(path_strings(model, parameter)) == {"model_zoo/a.pth", "model_zoo/default.pth"}


def test_published_files_are_in_a_zoo_hub_named_or_converted_from_caffe():
    published = [
        'path = "model_zoo/dncnn_25.pth"',
        'path = "weights/resnet50-19c8e357.pth"',
        'path = "data/pretrained_model/vgg16_caffe.pth"',
        'import os, sys\npath = os.path.join("modelzoo", "dncnn_" + sys.argv[1])',
    ]
    not_published = [
        'path = "runs/model_zoo.pth"',
        'path = "checkpoints/model-20231105.pth"',
        'import sys\npath = sys.argv[1]',
        'import sys\npath = "model_zoo/x.pth" if sys.argv[1] else "runs/x.pth"',
        'import os, sys\npath = os.path.join("modelzoo", sys.argv[1])',
        'import os\npath = os.path.join("model_zoo", "/home/user/runs/last.pth")',
    ]
    for source in published:
        assert names_a_published_file(*_last_value(source)), source
    for source in not_published:
        assert not names_a_published_file(*_last_value(source)), source
