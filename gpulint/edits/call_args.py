"""Reading and adding call arguments without disturbing the call's formatting."""

from __future__ import annotations

import ast
from typing import Optional

import libcst as cst


def may_pass_argument(call: cst.Call, keyword: str, position: int) -> bool:
    """Whether ``call`` passes (or, through ``*args``/``**kwargs``, may pass) a parameter.

    ``position`` is the parameter's 0-based positional slot in the callee's signature.
    """
    positional = 0
    for arg in call.args:
        if arg.star:
            return True
        if arg.keyword is None:
            positional += 1
        elif arg.keyword.value == keyword:
            return True
    return positional > position


def may_pass_argument_in_tree(call: ast.Call, keyword: str, position: int) -> bool:
    """:func:`may_pass_argument` on a call of Python's own syntax tree."""
    if any(isinstance(arg, ast.Starred) for arg in call.args):
        return True
    return any(k.arg in (keyword, None) for k in call.keywords) or len(call.args) > position


def _line_break_like(whitespace: cst.ParenthesizedWhitespace) -> cst.ParenthesizedWhitespace:
    """A line break to the same indentation as ``whitespace``, without its comment or blank lines."""
    return cst.ParenthesizedWhitespace(
        first_line=cst.TrailingWhitespace(),
        empty_lines=(),
        indent=whitespace.indent,
        last_line=whitespace.last_line,
    )


def _separator(call: cst.Call) -> cst.BaseParenthesizableWhitespace:
    """The whitespace this call puts between two arguments (after the comma)."""
    if len(call.args) >= 2:
        between = call.args[-2].comma
        if isinstance(between, cst.Comma):
            if isinstance(between.whitespace_after, cst.ParenthesizedWhitespace):
                return _line_break_like(between.whitespace_after)
            return between.whitespace_after
    if isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace):
        return _line_break_like(call.whitespace_before_args)
    return cst.SimpleWhitespace(" ")


def _keep_comment(original: cst.BaseParenthesizableWhitespace, separator: cst.ParenthesizedWhitespace) -> cst.ParenthesizedWhitespace:
    """``separator``, carrying over a comment and blank lines that ``original`` ended its line with."""
    if isinstance(original, cst.ParenthesizedWhitespace):
        return separator.with_changes(first_line=original.first_line, empty_lines=original.empty_lines)
    return separator


def _parenthesized_if_bare_generator(arg: cst.Arg) -> cst.Arg:
    """A lone generator argument needs its own parentheses once another argument joins it."""
    if isinstance(arg.value, cst.GeneratorExp) and not arg.value.lpar:
        return arg.with_changes(value=arg.value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]))
    return arg


def append_keyword(call: cst.Call, keyword: str, value: cst.BaseExpression) -> cst.Call:
    """``call`` with ``keyword=value`` added after its last argument, in the call's own layout.

    In a call laid out on one line the new argument follows the last one on the same line (a
    comment there moves after it); in a call with one argument per line it gets a line of its own
    at the same indentation, and comments stay with the argument they belong to. A trailing comma
    stays a trailing comma.
    """
    new_arg = cst.Arg(value=value, keyword=cst.Name(keyword), equal=cst.AssignEqual(
        whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")))
    if not call.args:
        return call.with_changes(args=[new_arg])
    separator = _separator(call)
    last = _parenthesized_if_bare_generator(call.args[-1])
    trailing_comma: Optional[cst.Comma] = last.comma if isinstance(last.comma, cst.Comma) else None
    closing = last.whitespace_after_arg if trailing_comma is None else trailing_comma.whitespace_after
    if isinstance(separator, cst.ParenthesizedWhitespace):
        between: cst.BaseParenthesizableWhitespace = _keep_comment(closing, separator)
        if isinstance(closing, cst.ParenthesizedWhitespace):
            closing = _line_break_like(closing)
    else:
        between = separator
    if trailing_comma is not None:
        last = last.with_changes(comma=trailing_comma.with_changes(whitespace_after=between))
        new_arg = new_arg.with_changes(comma=cst.Comma(whitespace_after=closing))
    else:
        last = last.with_changes(comma=cst.Comma(whitespace_after=between), whitespace_after_arg=cst.SimpleWhitespace(""))
        new_arg = new_arg.with_changes(whitespace_after_arg=closing)
    return call.with_changes(args=[*call.args[:-1], last, new_arg])
