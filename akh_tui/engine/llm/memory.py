"""`StructuredMemory`: the structured working memory (current goal, stage, completed, next
steps, lessons), size-capped, rendered into the prompt."""

from __future__ import annotations

from typing import Any, Mapping

from ..errors import InputError

MEMORY_MAX_BYTES = 2000  # the rendered memory's share of the prompt


class StructuredMemory:
    """Goal persistence across cycles: current goal, stage, completed, next steps, lessons.

    Stored size is capped (`max_items` per list, `max_chars` per string; the oldest list items
    go first). `render(max_bytes)` caps the prompt text: it drops list items, oldest first
    (for next_steps, the furthest step: the first step is the most immediate), and only then
    shortens the goal and stage.
    """

    LISTS = ("completed", "next_steps", "lessons")

    def __init__(self, current_goal: str = "", stage: str = "", completed: list[str] | None = None,
                 next_steps: list[str] | None = None, lessons: list[str] | None = None,
                 *, max_items: int = 20, max_chars: int = 300) -> None:
        self.max_items = max_items
        self.max_chars = max_chars
        self.current_goal = ""
        self.stage = ""
        self.completed: list[str] = []
        self.next_steps: list[str] = []
        self.lessons: list[str] = []
        self.update(current_goal=current_goal, stage=stage, completed=completed or [],
                    next_steps=next_steps or [], lessons=lessons or [])

    def _clip(self, s: Any) -> str:
        s = " ".join(str(s).split())
        return s if len(s) <= self.max_chars else s[: self.max_chars - 1] + "…"

    def _cap(self, items: list[str], keep_front: bool = False) -> list[str]:
        items = [c for c in (self._clip(i) for i in items) if c]
        if len(items) > self.max_items:
            items = items[: self.max_items] if keep_front else items[-self.max_items:]
        return items

    def update(self, current_goal: str | None = None, stage: str | None = None,
               completed: list[str] | None = None, next_steps: list[str] | None = None,
               lessons: list[str] | None = None) -> None:
        """Replace whichever fields are given (None leaves a field as it is)."""
        if current_goal is not None:
            self.current_goal = self._clip(current_goal)
        if stage is not None:
            self.stage = self._clip(stage)
        if completed is not None:
            self.completed = self._cap(list(completed))
        if next_steps is not None:
            self.next_steps = self._cap(list(next_steps), keep_front=True)
        if lessons is not None:
            self.lessons = self._cap(list(lessons))

    def add_completed(self, item: str) -> None:
        """Append a completed step; a step that was the first next step leaves next_steps."""
        item = self._clip(item)
        if not item:
            return
        if self.next_steps and self.next_steps[0] == item:
            self.next_steps.pop(0)
        self.completed = self._cap(self.completed + [item])

    def add_lesson(self, item: str) -> None:
        item = self._clip(item)
        if item and item not in self.lessons:
            self.lessons = self._cap(self.lessons + [item])

    def is_empty(self) -> bool:
        return not (self.current_goal or self.stage or self.completed or self.next_steps or self.lessons)

    def to_dict(self) -> dict[str, Any]:
        return {"current_goal": self.current_goal, "stage": self.stage, "completed": list(self.completed),
                "next_steps": list(self.next_steps), "lessons": list(self.lessons)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], file: str | None = None) -> "StructuredMemory":
        """Accept the flat form (to_dict) or the nested one (`progress: {stage, completed,
        next_steps}`); unknown keys are ignored, wrong types are InputErrors naming the field."""
        if not isinstance(d, Mapping):
            raise InputError("must be a table", file=file, field="working_memory")
        flat: dict[str, Any] = {k: d[k] for k in ("current_goal", "stage", *cls.LISTS) if k in d}
        progress = d.get("progress")
        if progress is not None:
            if not isinstance(progress, Mapping):
                raise InputError("must be a table", file=file, field="working_memory.progress")
            for k in ("stage", "completed", "next_steps"):
                if k in progress and k not in flat:
                    flat[k] = progress[k]
        for k in ("current_goal", "stage"):
            if k in flat and not isinstance(flat[k], str):
                raise InputError(f"must be a string, got {flat[k]!r}", file=file, field=f"working_memory.{k}")
        for k in cls.LISTS:
            if k in flat and (not isinstance(flat[k], list) or not all(isinstance(i, str) for i in flat[k])):
                raise InputError("must be a list of strings", file=file, field=f"working_memory.{k}")
        return cls(**flat)

    def _text(self, goal: str, stage: str, lists: dict[str, list[str]], omitted: dict[str, int]) -> str:
        out = [f"current goal: {goal or '(none)'}", f"stage: {stage or '(none)'}"]
        for name, title in (("completed", "completed"), ("next_steps", "next steps"), ("lessons", "lessons")):
            items = lists[name]
            if not items and not omitted[name]:
                continue
            more = f" ({omitted[name]} older omitted)" if omitted[name] and name != "next_steps" else (
                f" ({omitted[name]} later omitted)" if omitted[name] else "")
            out.append(f"{title}:{more}")
            out.extend(f"- {i}" for i in items)
        return "\n".join(out)

    def render(self, max_bytes: int = MEMORY_MAX_BYTES) -> str:
        lists = {k: list(getattr(self, k)) for k in self.LISTS}
        omitted = dict.fromkeys(self.LISTS, 0)
        goal, stage = self.current_goal, self.stage
        text = self._text(goal, stage, lists, omitted)
        while len(text.encode("utf-8")) > max_bytes and any(lists.values()):
            # drop from the longest list (ties: completed, lessons, next_steps)
            name = max(("completed", "lessons", "next_steps"), key=lambda k: len(lists[k]))
            if name == "next_steps":
                lists[name].pop()
            else:
                lists[name].pop(0)
            omitted[name] += 1
            text = self._text(goal, stage, lists, omitted)
        if len(text.encode("utf-8")) > max_bytes:
            # lists are empty: shorten the goal and stage, then cut hard on a character boundary
            half = max(0, max_bytes // 2 - 20)
            goal = goal.encode("utf-8")[:half].decode("utf-8", "ignore")
            stage = stage.encode("utf-8")[:half].decode("utf-8", "ignore")
            text = self._text(goal, stage, lists, omitted)
            text = text.encode("utf-8")[: max(0, max_bytes)].decode("utf-8", "ignore")
        return text
