"""Output serializers as plain functions, for the busiest answers.

`Serializer(instance).data` deep-copies the serializer's declared fields for every answer: on `/v1/track` and
`/v1/send` that cost 20-30 times building the same dict by hand. A serializer bound once still walks its fields
through DRF's generic attribute lookup, about 3 times the dict. `output(S)` builds `S`'s fields once and returns a
function that walks them as `Serializer.to_representation` does, with each field's own `to_representation`, and
`get_attribute` taken directly for plain keys and attributes (DRF's own for anything else): about twice the dict.
The output serializer stays the one definition of the answer and of its OpenAPI schema.
"""

from collections.abc import Callable, Mapping
from typing import Any

from django.db.models.manager import BaseManager
from rest_framework.fields import Field, SkipField
from rest_framework.relations import PKOnlyObject
from rest_framework.serializers import ListSerializer, Serializer


def output(serializer_class: type[Serializer]) -> Callable[[Any], dict]:
    """`serializer_class(instance).data` as a function of `instance`, with the same result."""
    return _represent(serializer_class())


def _represent(field: Field) -> Callable[[Any], Any]:
    if isinstance(field, ListSerializer) and type(field).to_representation is ListSerializer.to_representation:
        child = _represent(field.child)

        def represent_list(data):
            return [child(item) for item in (data.all() if isinstance(data, BaseManager) else data)]

        return represent_list
    if isinstance(field, Serializer) and type(field).to_representation is Serializer.to_representation:
        steps = [(child.field_name, _getter(child), _represent(child)) for child in field._readable_fields]

        def represent(instance) -> dict:
            # Serializer.to_representation, over the readable fields listed once.
            out = {}
            for name, get_attribute, to_representation in steps:
                try:
                    attribute = get_attribute(instance)
                except SkipField:
                    continue
                check_for_none = attribute.pk if isinstance(attribute, PKOnlyObject) else attribute
                out[name] = None if check_for_none is None else to_representation(attribute)
            return out

        return represent
    return field.to_representation


def _getter(field: Field) -> Callable[[Any], Any]:
    """`field.get_attribute`, with its common case taken first: a chain of keys of plain dicts and attributes of
    other objects (not mappings), none of them callable. Anything else (a callable to call, another mapping, a
    missing attribute, a default) is left to DRF's own `get_attribute`, which then starts again from `instance`; so
    is a field with a `get_attribute` of its own (related fields)."""
    attrs = field.source_attrs
    get_attribute = field.get_attribute
    if not attrs or type(field).get_attribute is not Field.get_attribute:
        return get_attribute

    def get(instance):
        value = instance
        try:
            for attr in attrs:
                if type(value) is dict:
                    value = value[attr]
                elif isinstance(value, Mapping):
                    raise LookupError(attr)  # DRF's way
                else:
                    value = getattr(value, attr)
                if callable(value):
                    raise LookupError(attr)  # DRF's way: it calls simple callables
        except Exception:
            return get_attribute(instance)
        return value

    return get
