"""The REST kit every app's views share: validated input that names unknown fields, OpenAPI response
shapes derived from the wire TypedDicts (with `yullu_core.wire` markers), and `documented`, our
error contract on extend_schema. The views are plain APIViews (validate → service → dict), so their
shapes are declared with these; schemathesis checks every response against them."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from types import UnionType
from typing import (
    Annotated,
    Any,
    Literal,
    NotRequired,
    Required,
    Union,
    get_args,
    get_origin,
    get_type_hints,
    is_typeddict,
)

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field, inline_serializer
from rest_framework import serializers

from yullu_core.arguments import missing, not_an_object, too_long, unknown_arguments, wrong_type
from yullu_core.wire import DATETIME, UUID, Doc, Format


class BearerAuthScheme(OpenApiAuthenticationExtension):
    target_class = "access.auth.BearerTokenAuthentication"
    name = "bearer"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "description": "the token from `yullu token`"}


Error = inline_serializer("Error", {"error": serializers.CharField()})
# Every operation can answer these: bad input (e.g. NUL in a query string), bad token, too many
# bad tokens, database down.
ALWAYS = (400, 401, 429, 503)


_shapes: dict[type, type[serializers.Serializer]] = {}


def shape(typed_dict: type) -> type[serializers.Serializer]:
    """The schema serializer of a wire TypedDict (memories.wire, sync's and dreaming's results): one component per
    TypedDict, named after it, with its fields, nullability and `yullu_core.wire` markers. Used
    only to describe responses; the views return what the TypedDict's builder makes."""
    if typed_dict not in _shapes:
        hints = get_type_hints(typed_dict, include_extras=True)
        # Typing has no type for "any TypedDict class", so the parameter is a plain `type`.
        required = typed_dict.__required_keys__  # type: ignore[attr-defined]
        fields = {name: _field(hint, required=_required(name, hint, required)) for name, hint in hints.items()}
        _shapes[typed_dict] = type(typed_dict.__name__, (serializers.Serializer,), fields)
    return _shapes[typed_dict]


def _required(name: str, hint: Any, required_keys: frozenset[str]) -> bool:
    # With postponed annotations the TypedDict cannot see NotRequired[...] itself; the hint can.
    if get_origin(hint) is NotRequired:
        return False
    return get_origin(hint) is Required or name in required_keys


def _field(hint: Any, *, required: bool = True) -> serializers.Field:
    kwargs: dict[str, Any] = {} if required else {"required": False}
    if get_origin(hint) in (Required, NotRequired):
        hint = get_args(hint)[0]
    fmt = None
    if get_origin(hint) is Annotated:
        hint, *meta = get_args(hint)
        for m in meta:
            if isinstance(m, Format):
                fmt = m
            elif isinstance(m, Doc):
                kwargs["help_text"] = m.text
    if get_origin(hint) in (Union, UnionType) and type(None) in get_args(hint):
        kwargs["allow_null"] = True
        (hint,) = [a for a in get_args(hint) if a is not type(None)]
    origin, args = get_origin(hint), get_args(hint)
    if fmt is UUID:
        return serializers.UUIDField(**kwargs)
    if fmt is DATETIME:
        return serializers.DateTimeField(**kwargs)
    if origin is Literal:
        return serializers.ChoiceField(choices=list(args), **kwargs)
    if origin is list:
        return serializers.ListField(child=_field(args[0]), **kwargs)
    if origin is dict:
        return serializers.DictField(child=_field(args[1]), **kwargs)
    if is_typeddict(hint):
        return shape(hint)(**kwargs)
    simple = {bool: serializers.BooleanField, int: serializers.IntegerField, float: serializers.FloatField}
    if hint in simple:
        return simple[hint](**kwargs)
    if hint is str:
        return serializers.CharField(allow_blank=True, **kwargs)
    return serializers.JSONField(**kwargs)


def obj(name: str, **fields: serializers.Field) -> serializers.Serializer:
    return inline_serializer(name, fields)


def many(name: str, key: str, item: Any) -> serializers.Serializer:
    return inline_serializer(name, {key: serializers.ListField(child=item)})


def query(name: str, kind: Any = str, description: str = "") -> OpenApiParameter:
    return OpenApiParameter(name, kind, OpenApiParameter.QUERY, required=False, description=description)


PROJECT = query("project_id", description="only this project")


def documented(
    ok: Any = OpenApiTypes.OBJECT,
    *,
    request: Any = None,
    status: int = 200,
    params: list[OpenApiParameter] | None = None,
    errors: tuple[int, ...] = (400,),
    summary: str = "",
    operation_id: str | None = None,
    also: dict[int, Any] | None = None,
) -> Callable[[Any], Any]:
    """extend_schema with our error contract: every listed status answers `{"error": "..."}`.
    `also`: further success statuses and their bodies. A query parameter not in `params` is a
    400 naming it (docs/contract.md §4): a misspelt `?project=` on a list must not quietly list every project."""
    responses: dict[int, Any] = {status: ok, **(also or {})}
    responses.update({code: Error for code in (*errors, *ALWAYS)})
    schema = extend_schema(
        request=request,
        responses=responses,
        parameters=params or [],
        summary=summary or None,
        operation_id=operation_id,
    )
    allowed = sorted(p.name for p in params or [])

    def decorate(method: Callable[..., Any]) -> Any:
        @wraps(method)
        def view(self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
            unknown = sorted(set(request.query_params) - set(allowed))
            if unknown:  # the sentence MCP's tools give (yullu_core.arguments)
                raise serializers.ValidationError(unknown_arguments(unknown, allowed))
            return method(self, request, *args, **kwargs)

        return schema(view)

    return decorate


def as_given(
    schema: dict[str, Any], *, required: bool = False, judge: Callable[[Any], Any] | None = None, **options: Any
) -> Any:
    """A field whose value goes to the service as given, for the service's rule to judge (so REST and the
    MCP tool, which takes it AS_GIVEN, answer a bad value with the same sentence), described to OpenAPI by
    `schema`. `judge` runs that rule here already, so the first bad field of a body is the one named."""

    @extend_schema_field(schema)
    class AsGiven(serializers.Field):
        def to_internal_value(self, data: Any) -> Any:
            if judge is not None:
                judge(data)  # raises UserError: answered as {"error": sentence} (yullu_core.api_errors)
            return data

        def to_representation(self, value: Any) -> Any:
            return value

    return AsGiven(required=required, allow_null=True, **options)


def argument(rule: Any, *, required: bool = False, **options: Any) -> Any:
    """A tool's or endpoint's argument judged by its rule in yullu_core/arguments.py, as over MCP."""
    return as_given(rule.schema(), required=required, judge=rule.clean, **options)


def valid(serializer_cls: type[serializers.Serializer], data: Any) -> dict[str, Any]:
    """Validated data; a field the endpoint does not declare (a misspelt `limt`) is an error naming it, a body
    that is no object (a list, a string) one saying so."""
    if not isinstance(data, dict):
        raise serializers.ValidationError(not_an_object(data))
    fields = sorted(serializer_cls().fields)
    unknown = sorted(set(data) - set(fields))
    if unknown:  # the sentence MCP's tools give (yullu_core.arguments)
        raise serializers.ValidationError(unknown_arguments(unknown, fields))
    s = serializer_cls(data=data)
    if not s.is_valid():
        raise serializers.ValidationError(said_as_mcp(s, data) or s.errors)
    return dict(s.validated_data)


# DRF's fields, by the kind of value they want (yullu_core.arguments.KINDS).
DRF_KINDS: tuple[tuple[type[serializers.Field], str], ...] = (
    (serializers.BooleanField, "boolean"),
    (serializers.IntegerField, "integer"),
    (serializers.ListField, "list"),
    (serializers.CharField, "string"),
)


def said_as_mcp(s: serializers.Serializer, data: Any) -> str | None:
    """The first field error in the sentence MCP's tools give for the same mistake (a missing argument, a wrong
    type, a string too long: yullu_core.arguments), or None for DRF's own (a range, a body that is no object)."""
    errors: Any = s.errors
    for name, problems in errors.items():
        field, value, where = s.fields.get(name), data.get(name) if isinstance(data, dict) else None, name
        while isinstance(problems, dict) and field is not None:  # a list item's error: {0: [...]}
            index, problems = next(iter(problems.items()))
            field, where = getattr(field, "child", None), f"{where}[{index}]"
            value = value[index] if isinstance(value, list) and isinstance(index, int) and index < len(value) else None
        code = getattr(problems[0], "code", None) if isinstance(problems, list) and problems else None
        kind = next((k for cls, k in DRF_KINDS if isinstance(field, cls)), None)
        if code == "required":
            return missing(where)
        if code in ("invalid", "null", "not_a_list") and kind:
            return wrong_type(where, kind)
        if code == "max_length" and isinstance(value, str) and isinstance(field, serializers.CharField):
            return too_long(where, len(value), field.max_length or 0)
        return None
    return None


class StrictText(serializers.CharField):
    """A string, and only a string: DRF's CharField turns 5 into "5" where MCP's tools refuse it."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return str(super().to_internal_value(data))
