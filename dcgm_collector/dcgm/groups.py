"""Entity groups and field groups a handle creates, and the argument types that name them."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from typing_extensions import Self


class GroupOwner(Protocol):
    """What a group needs of the handle that made it (the handle itself; named here so groups need not import it)."""

    def _group_entities(self, group: EntityGroup) -> list[tuple[int, int]]: ...

    def _release(self, key: tuple, quiet: bool = False) -> None: ...


class EntityGroup:
    """A DCGM entity group; destroyed by :meth:`destroy`, ``with`` or the handle's close."""

    def __init__(self, handle: GroupOwner, group_id: int, name: str, owned: bool) -> None:
        self.handle = handle
        self.id = group_id
        self.name = name
        self.owned = owned

    def entities(self) -> list[tuple[int, int]]:
        """(entity group, entity id) pairs the group holds now (``dcgmGroupGetInfo``)."""
        return self.handle._group_entities(self)

    def destroy(self) -> None:
        if self.owned:
            self.handle._release(("group", self.id))

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.destroy()

    def __repr__(self) -> str:
        return f"EntityGroup(id={self.id:#x}, name={self.name!r})"


class FieldGroup:
    """One DCGM field group (at most 127 field ids)."""

    def __init__(self, handle: GroupOwner, field_group_id: int, name: str, field_ids: tuple[int, ...]) -> None:
        self.handle = handle
        self.id = field_group_id
        self.name = name
        self.field_ids = field_ids

    def destroy(self) -> None:
        self.handle._release(("fieldgroup", self.id))

    def __repr__(self) -> str:
        return f"FieldGroup(id={self.id}, name={self.name!r}, {len(self.field_ids)} fields)"


class FieldGroupSet(Sequence[FieldGroup]):
    """The DCGM field groups one list of field ids was split into."""

    def __init__(self, groups: Sequence[FieldGroup]) -> None:
        self._groups = tuple(groups)

    @property
    def field_ids(self) -> tuple[int, ...]:
        return tuple(itertools.chain.from_iterable(g.field_ids for g in self._groups))

    def destroy(self) -> None:
        for group in reversed(self._groups):
            group.destroy()

    def __getitem__(self, index):  # type: ignore[override]
        return self._groups[index]

    def __len__(self) -> int:
        return len(self._groups)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.destroy()

    def __repr__(self) -> str:
        return f"FieldGroupSet({list(self._groups)!r})"


GroupArg = EntityGroup | int
FieldGroupsArg = FieldGroup | Iterable[FieldGroup]
