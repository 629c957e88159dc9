"""Reading and adding call arguments without disturbing the call's formatting."""

from __future__ import annotations

from typing import Union

import libcst as cst

_Whitespace = Union[cst.SimpleWhitespace, cst.ParenthesizedWhitespace]


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


def _line_break_like(whitespace: cst.ParenthesizedWhitespace) -> cst.ParenthesizedWhitespace:
    """A line break to the same indentation as ``whitespace``, without its comment or blank lines."""
    return cst.ParenthesizedWhitespace(
        first_line=cst.TrailingWhitespace(),
        empty_lines=(),
        indent=whitespace.indent,
        last_line=whitespace.last_line,
    )


def _separator(call: cst.Call) -> _Whitespace:
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


def _keep_comment(original: _Whitespace, separator: _Whitespace) -> _Whitespace:
    """``separator``, carrying over a comment and blank lines that ``original`` ended its line with."""
    if not isinstance(original, cst.ParenthesizedWhitespace):
        return separator
    if isinstance(separator, cst.ParenthesizedWhitespace):
        return separator.with_changes(first_line=original.first_line, empty_lines=original.empty_lines)
    has_comment = original.first_line.comment is not None or any(line.comment for line in original.empty_lines)
    return original if has_comment else separator


def append_keyword(call: cst.Call, keyword: str, value: cst.BaseExpression) -> cst.Call:
    """``call`` with ``keyword=value`` added after its last argument, in the call's own layout.

    A one-line call stays on one line; a call with one argument per line gets the new argument on
    its own line, at the same indentation; a trailing comma and comments stay where they were.
    """
    new_arg = cst.Arg(value=value, keyword=cst.Name(keyword), equal=cst.AssignEqual(
        whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")))
    if not call.args:
        return call.with_changes(args=[new_arg])
    separator = _separator(call)
    last = call.args[-1]
    if isinstance(last.comma, cst.Comma):
        closing = last.comma.whitespace_after
        last = last.with_changes(comma=last.comma.with_changes(whitespace_after=_keep_comment(closing, separator)))
        closing_without_comment = _line_break_like(closing) if isinstance(closing, cst.ParenthesizedWhitespace) else closing
        new_arg = new_arg.with_changes(comma=cst.Comma(whitespace_after=closing_without_comment))
    else:
        closing = last.whitespace_after_arg
        last = last.with_changes(
            comma=cst.Comma(whitespace_after=_keep_comment(closing, separator)),
            whitespace_after_arg=cst.SimpleWhitespace(""),
        )
        if isinstance(closing, cst.ParenthesizedWhitespace):
            closing = _line_break_like(closing)
        new_arg = new_arg.with_changes(whitespace_after_arg=closing)
    return call.with_changes(args=[*call.args[:-1], last, new_arg])
