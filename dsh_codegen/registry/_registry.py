"""``ToolRegistry`` and ``ToolScope``: the registry state (layers, listeners, scopes).

The registry holds state; the pipeline (``pipeline/``) holds order and reads
the state through the small read interface below (``entry_view``,
``resolve``, ``listeners_for``, ``guards_of``, ``guarded``, ``version``,
``chain_for``, ``presentation``, ``view``), never the registry's privates. A call
resolves its *scope chain* from ``ToolExecutionInput.agent`` (nearest scope
first, then its parents; the global layer is implicit), and sees:

- tools: the global layer, then each scope from the farthest to the nearest:
  that scope's masks filter everything it inherits, then its own
  registrations shadow and follow (own registrations are never masked by
  their own scope);
- listeners: every global listener plus those registered through a scope on
  the chain, in registration order (``prepend=True`` puts one first);
- guards: the global layer's (live), then each scope's from the farthest to
  the nearest;
- presentation: the nearest ``present_as`` on the chain, else the registry's ``mode``.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Coroutine, Hashable, Iterable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

from dsh_codegen.codegen import ToolSchemaEntry
from dsh_codegen.json import LosslessJsonError, snapshot_json
from dsh_codegen.registry._approval import ApprovalService
from dsh_codegen.registry._assembly import (
    PromptAssembly,
    assemble_for,
    run_assemble_listeners,
    sdk_renderer,
)
from dsh_codegen.registry._codemode_seam import DEFAULT_RUN_CODE_CHARS, CodeRuntime, mount_code_mode, run_code_tool
from dsh_codegen.registry._definitions import _MALFORMED as MALFORMED
from dsh_codegen.registry._definitions import CompiledTool, check_for_registration, soft_arguments
from dsh_codegen.registry._errors import RUN_CODE_NAME, ToolNotFoundError
from dsh_codegen.registry._execution import ToolExecutionInput
from dsh_codegen.registry._gate import PipelineGate
from dsh_codegen.registry.pipeline import CallSettle, run_hooked, run_pipeline
from dsh_codegen.registry._results import ToolExecutionResult

if TYPE_CHECKING:
    from dsh_codegen.registry._definitions import ToolDefinition
    from dsh_codegen.registry._execution import ToolExecution

__all__ = ["Disposer", "ToolChange", "ToolRegistry", "ToolSchema", "ToolScope"]

_log = logging.getLogger("dsh_codegen")

PresentationMode: TypeAlias = Literal["native", "code", "both"]
_MODES: Final = ("native", "code", "both")

RESERVED_RESTRICT: Final = (
    'restrict() cannot name reserved Code Mode presentation transport "run_code"; restrict end-capability tools instead'
)
UNSCOPED_RESTRICT: Final = (
    "restrict() requires a scoped context (a ToolScope from registry.scope(agent));"
    " the registry itself has no inherited tools to filter"
)
EMPTY_RESTRICT: Final = "restrict() without allow= or deny= names is a no-op; name the inherited tools to allow or deny"
UNSCOPED_PRESENT_AS: Final = (
    "present_as() requires a scoped context (a ToolScope from registry.scope(agent));"
    " the process-wide presentation is ToolRegistry(mode=...)"
)


class Disposer:
    """Undo one registration. Calling it more than once does nothing."""

    __slots__ = ("_fn",)

    def __init__(self, fn: Callable[[], None]) -> None:
        self._fn: Callable[[], None] | None = fn

    def __call__(self) -> None:
        fn = self._fn
        if fn is not None:
            self._fn = None
            fn()

    @property
    def disposed(self) -> bool:
        """Whether the registration has been undone."""
        return self._fn is None


@dataclass(frozen=True, slots=True)
class ToolChange:
    """A registry change notification (``on_change``).

    ``kind`` is ``register``, ``unregister``, ``restrict`` or ``present_as``;
    ``name`` is the tool name for the first two; ``agent`` is the scope's key
    (``None`` for the global layer).
    """

    kind: Literal["register", "unregister", "restrict", "present_as"]
    name: str | None
    agent: Hashable | None


ToolSchema: TypeAlias = dict[str, Any]


class ListenerEntry:
    """One registered listener: the function, its scope (``None`` = global) and whether it is live."""

    __slots__ = ("alive", "fn", "scope")

    def __init__(self, fn: Callable[..., Any], scope: ToolScope | None) -> None:
        self.fn = fn
        self.scope = scope
        self.alive = True


class _Mask:
    """One ``restrict()`` filter: names snapshotted at registration."""

    __slots__ = ("allow", "deny")

    def __init__(self, allow: frozenset[str] | None, deny: frozenset[str]) -> None:
        self.allow = allow
        self.deny = deny

    def admits(self, name: str) -> bool:
        return (self.allow is None or name in self.allow) and name not in self.deny


class _Layer:
    """One registration layer: the global one or a scope's."""

    __slots__ = ("guards", "masks", "presentation", "tools")

    def __init__(self) -> None:
        self.tools: dict[str, CompiledTool] = {}
        self.guards: tuple[ListenerEntry, ...] = ()
        self.masks: tuple[_Mask, ...] = ()
        self.presentation: PresentationMode | None = None


class ListenerSnapshot:
    """The listeners one call runs, fixed when the call starts (guards excepted)."""

    __slots__ = ("any", "calls", "observers", "post", "pre", "wrappers")

    def __init__(
        self,
        pre: tuple[ListenerEntry, ...],
        wrappers: tuple[ListenerEntry, ...],
        post: tuple[ListenerEntry, ...],
        observers: tuple[ListenerEntry, ...],
        calls: tuple[ListenerEntry, ...] = (),
    ) -> None:
        self.pre = pre
        self.wrappers = wrappers
        self.post = post
        self.observers = observers
        # The on_execute hooks (entry to settlement of the whole call).
        self.calls = calls
        # Whether there is any listener at all (a call without one makes no execution up front).
        self.any = bool(pre or wrappers or post or observers or calls)


_METHOD_OF: Final = {
    "_pre": "on_pre_execute()",
    "_wrappers": "wrap_execute()",
    "_post": "on_post_execute()",
    "_observers": "on_result()",
    "_changes": "on_change()",
    "_assemblers": "on_assemble()",
    "_dispatch_log": "on_code_dispatch_log()",
    "_calls": "on_execute()",
}


def _check_listener(label: str, fn: object, *, sync_only: bool) -> None:
    if not callable(fn):
        raise TypeError(f"{label}: listener must be callable, got {type(fn).__name__}")
    if sync_only and inspect.iscoroutinefunction(fn):
        raise TypeError(f"{label}: listener must be synchronous (got a coroutine function)")


def _check_mode(mode: object) -> PresentationMode:
    if mode not in _MODES or type(mode) is not str:
        raise ValueError(f'mode must be "native", "code" or "both", got {mode!r}')
    return mode


class _Surface:
    """Registration methods shared by the registry (global layer) and a scope."""

    _registry: ToolRegistry
    _owner: ToolScope | None

    def _layer(self) -> _Layer:
        raise NotImplementedError

    def _track(self, disposer: Disposer) -> Disposer:
        return disposer

    def register(self, definition: ToolDefinition) -> Disposer:
        """Register ``definition`` in this layer; return its disposer.

        Raised errors: ``TypeError`` (not a definition, missing ``output``:
        ``tool "<name>" must declare output { schema, render,
        presentation_meta? }``, a bad callback); ``ValueError`` for the reserved
        ``run_code``, a duplicate name in this layer or ``tool "<name>"
        timeout_ms must be a positive finite number``; ``JsonSchemaError`` for
        an unsupported output schema; whatever an ``on_change`` listener raises
        (the registration is then rolled back).
        """
        return self._track(self._registry._register(definition, self._owner, self._layer()))

    def guard(self, fn: Callable[[Any], str | None]) -> Disposer:
        """Add a synchronous guard ``fn(execution) -> reason | None`` (monotonic: any reason denies)."""
        _check_listener("guard()", fn, sync_only=True)
        layer = self._layer()
        entry = ListenerEntry(fn, self._owner)
        layer.guards = (*layer.guards, entry)

        def dispose() -> None:
            entry.alive = False
            layer.guards = tuple(item for item in layer.guards if item is not entry)

        return self._track(Disposer(dispose))

    def on_pre_execute(self, fn: Callable[..., Any], *, prepend: bool = False) -> Disposer:
        """Add a pre-execute listener ``fn(execution, next) -> Allow | Deny | Ask`` (sync or async).

        ``await next()`` returns the downstream decision (``Allow()`` at the
        end); not calling it short-circuits; calling it twice raises ``RuntimeError``.
        """
        return self._track(self._registry._add_listener("_pre", fn, self._owner, prepend))

    def wrap_execute(self, fn: Callable[..., Any], *, prepend: bool = False) -> Disposer:
        """Add an around-dispatch wrapper ``fn(dispatch, next) -> result`` (sync or async).

        ``await next(signal=None)`` runs the inner layers and returns a
        normalized frozen result (never raising for body failures); passing a
        signal replaces it for the inner layers. The first registered wrapper
        is the outermost.
        """
        return self._track(self._registry._add_listener("_wrappers", fn, self._owner, prepend))

    def on_execute(self, fn: Callable[[ToolExecution], CallSettle | None]) -> Disposer:
        """Add a call hook ``fn(execution) -> settle | None`` that spans a whole call, entry to settlement.

        ``fn`` (synchronous) is called once per call when the call enters
        ``execute``, after its input was read and before any stage runs, in the
        task (and ``contextvars`` context) that runs the call; it sees every
        call of this layer's chains, entry failures included. It may return
        ``settle(result, error)``, which the registry calls exactly once when
        the call is over, in that same task and context, even if the hook was
        disposed meanwhile: after ``finalize_content`` and the ``on_result``
        observers, just before ``execute`` returns or raises. ``result`` is the
        final result (the object the observers saw), or ``None`` if an
        exception escaped before there was one; ``error`` is the exception
        ``execute`` is about to raise (the ``CancelledError`` of a cancelled
        task, which comes with its ``ABORTED`` result), else ``None``. Hooks run
        in registration order, their settles in the reverse order. An exception
        from either is logged at WARNING on the ``dsh_codegen`` logger and
        changes nothing in the call. Raised errors: ``TypeError`` for a
        coroutine function (see ``docs/registry.md``, "Call hooks").
        """
        _check_listener("on_execute()", fn, sync_only=True)
        return self._track(self._registry._add_listener("_calls", fn, self._owner, False))

    def on_post_execute(self, fn: Callable[..., Any], *, prepend: bool = False) -> Disposer:
        """Add a post-execute listener ``fn(execution, result, next) -> Accept | Block`` (sync or async)."""
        return self._track(self._registry._add_listener("_post", fn, self._owner, prepend))

    def on_result(self, fn: Callable[..., Any]) -> Disposer:
        """Add an observer ``fn(execution, result)`` (sync or async); failures are logged, never raised."""
        return self._track(self._registry._add_listener("_observers", fn, self._owner, False))

    def on_change(self, fn: Callable[[ToolChange], object]) -> Disposer:
        """Add a synchronous change listener; it sees every registry change (unfiltered).

        A listener raising during ``register`` rolls that registration back and
        the error propagates; raising on other changes is logged.
        """
        _check_listener("on_change()", fn, sync_only=True)
        return self._track(self._registry._add_listener("_changes", fn, self._owner, False))

    def on_code_dispatch_log(self, fn: Callable[..., Any], *, prepend: bool = False) -> Disposer:
        """Add a Code Mode dispatch-log listener ``fn(event) -> event | None`` (sync or async).

        Listeners rewrite each ``tool/code-dispatch-start`` / ``tool/code-dispatch``
        event before the bridge appends it to the session log, as a waterfall in
        registration order: each sees the previous one's event, returning
        ``None`` keeps it. A raising listener is logged and skipped (see
        ``docs/codemode.md``).
        """
        return self._track(self._registry._add_listener("_dispatch_log", fn, self._owner, prepend))

    def on_assemble(self, fn: Callable[..., PromptAssembly]) -> Disposer:
        """Add a synchronous assembly listener ``fn(assembly, next) -> PromptAssembly``; its result is authoritative."""
        _check_listener("on_assemble()", fn, sync_only=True)
        return self._track(self._registry._add_listener("_assemblers", fn, self._owner, False))


class ToolScope(_Surface):
    """One agent's layer over the global registry (and over its parent scope).

    Registrations, listeners, guards, masks and the presentation declared
    through a scope apply to calls whose scope chain contains it. A scope is a
    context manager; leaving it (or :meth:`dispose`) undoes everything
    registered through it, and disposes its child scopes first.
    """

    def __init__(self, registry: ToolRegistry, agent: Hashable, parent: ToolScope | None) -> None:
        self._registry = registry
        self._owner = self
        self.agent = agent
        self.parent = parent
        self.layer = _Layer()
        self.chain: tuple[ToolScope, ...] = (self,) if parent is None else (self, *parent.chain)
        self._disposers: list[Disposer] = []
        self._children: list[ToolScope] = []
        self._disposed = False
        self._view_cache: tuple[int, dict[str, CompiledTool]] | None = None
        self._listener_cache: tuple[int, ListenerSnapshot] | None = None

    def __repr__(self) -> str:
        return f"<ToolScope agent={self.agent!r}{' disposed' if self._disposed else ''}>"

    @property
    def registry(self) -> ToolRegistry:
        """The registry this scope belongs to (its approval service, its ``execute``)."""
        return self._registry

    def _layer(self) -> _Layer:
        if self._disposed:
            raise ValueError(f"scope {self.agent!r} is disposed")
        return self.layer

    def _track(self, disposer: Disposer) -> Disposer:
        disposers = self._disposers
        if len(disposers) >= 64 and len(disposers) & (len(disposers) - 1) == 0:
            # Drop already-disposed entries now and then (at powers of two) so a
            # long-lived scope that registers and disposes repeatedly stays small.
            disposers[:] = [d for d in disposers if not d.disposed]
        disposers.append(disposer)
        return disposer

    @property
    def disposed(self) -> bool:
        return self._disposed

    def get(self, name: str) -> ToolDefinition | None:
        """The definition this scope resolves ``name`` to, or ``None`` (unknown or restricted away)."""
        return self._registry.get(name, self)

    def schemas(self) -> list[ToolSchema]:
        """``{name, description, parameters}`` deep copies of what this scope sees (see ``ToolRegistry.schemas``)."""
        return self._registry.schemas(self)

    def catalog(self) -> list[ToolSchemaEntry]:
        """Catalog entries of what this scope sees (see ``ToolRegistry.catalog``)."""
        return self._registry.catalog(self)

    def assemble(self, tool_order: Sequence[str] | None = None) -> PromptAssembly:
        """This scope's prompt assembly (see ``ToolRegistry.assemble``)."""
        return self._registry.assemble(self, tool_order)

    def restrict(self, *, allow: Iterable[str] | None = None, deny: Iterable[str] | None = None) -> Disposer:
        """Mask the tools this scope inherits (own registrations exempt); return the mask's disposer.

        ``allow`` keeps only the named inherited tools (later inherited names
        stay hidden); ``deny`` hides the named ones (later names are admitted).
        Both names are snapshotted now. Masks intersect, and reach nested scopes.

        Raised errors (``ValueError``): no names at all (``restrict() without
        allow= or deny= names is a no-op ...``), the reserved ``run_code``,
        names that this scope does not inherit (``restrict() names unknown
        global tool "x"; known global tools: a, b``).
        """
        layer = self._layer()
        # Each iterable is read once (it may be a generator); the checks below use the snapshots.
        allow_names = None if allow is None else _names("allow", allow)
        deny_names = () if deny is None else _names("deny", deny)
        if allow_names is None and not deny_names:
            raise ValueError(EMPTY_RESTRICT)
        named = (*(allow_names or ()), *deny_names)  # allow first: the error lists names as given
        if RUN_CODE_NAME in named:
            raise ValueError(RESERVED_RESTRICT)
        known = self._registry._inherited_names(self)
        unknown = [name for name in named if name not in known]
        if unknown:
            unknown = list(dict.fromkeys(unknown))
            listed = ", ".join(f'"{name}"' for name in unknown)
            noun = "tool" if len(unknown) == 1 else "tools"
            known_text = ", ".join(sorted(known)) if known else "(none)"
            raise ValueError(f"restrict() names unknown global {noun} {listed}; known global tools: {known_text}")
        mask = _Mask(None if allow_names is None else frozenset(allow_names), frozenset(deny_names))
        layer.masks = (*layer.masks, mask)
        registry = self._registry
        registry._changed(ToolChange("restrict", None, self.agent))

        def dispose() -> None:
            layer.masks = tuple(item for item in layer.masks if item is not mask)
            registry._changed(ToolChange("restrict", None, self.agent))

        return self._track(Disposer(dispose))

    def present_as(self, mode: PresentationMode) -> Disposer:
        """Select this scope's presentation (``native``/``code``/``both``), shadowing the registry's ``mode``.

        Raised errors (``ValueError``): an unknown mode; a second declaration in
        this scope (``present_as("both") conflicts with "code" already declared
        for this scope; one composition selects one presentation``).
        """
        layer = self._layer()
        checked = _check_mode(mode)
        if layer.presentation is not None:
            raise ValueError(
                f'present_as("{checked}") conflicts with "{layer.presentation}" already declared'
                " for this scope; one composition selects one presentation"
            )
        layer.presentation = checked
        registry = self._registry
        registry._changed(ToolChange("present_as", None, self.agent))

        def dispose() -> None:
            layer.presentation = None
            registry._changed(ToolChange("present_as", None, self.agent))

        return self._track(Disposer(dispose))

    def dispose(self) -> None:
        """Undo every registration made through this scope and its children; idempotent."""
        if self._disposed:
            return
        for child in list(self._children):
            child.dispose()
        self._disposed = True
        disposers, self._disposers = self._disposers, []
        for disposer in reversed(disposers):
            try:
                disposer()
            except Exception:
                _log.warning("disposing scope %r: a disposer raised", self.agent, exc_info=True)
        self._registry._forget_scope(self)

    def __enter__(self) -> ToolScope:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.dispose()


def _names(label: str, names: Iterable[str]) -> tuple[str, ...]:
    """The names of ``allow=``/``deny=``, read once, in the order given."""
    if isinstance(names, str):
        raise TypeError(f"restrict(): {label}= must be a list of tool names, not a string")
    snapshot = tuple(names)
    for name in snapshot:
        if type(name) is not str:
            raise TypeError(f"restrict(): {label}= names must be strings, got {name!r}")
    return snapshot


class ToolRegistry(_Surface):
    """The tool registry: the global layer, per-agent scopes, and ``execute``.

    ``mode`` is the deployment presentation (``native``, ``code``, ``both``);
    ``code_runtime`` is needed by the non-native modes (checked when
    assembling and when ``run_code`` runs, not here). A runtime alone does not
    offer ``run_code``: under ``mode="native"`` it serves only scopes that
    ``present_as("code")`` or ``"both"``; when no scope chose a presentation,
    a ``run_code`` call fails naming the setting. :meth:`set_code_runtime` mounts a runtime (and a
    mode) on a registry built without one. ``approval`` services
    ``Ask`` decisions; ``max_parallel_sub_calls`` caps Code Mode sub-call
    overlap; ``max_sub_calls`` caps one program's binding calls;
    ``max_run_code_chars`` caps the text a ``run_code`` result shows the model
    (its head and tail around a marker; ``None``: no cap; see
    ``docs/codemode.md``); ``log`` is the default session log of the loop helper.
    ``relax_strict_nulls=True`` accepts what an OpenAI strict-mode model sends
    (``to_openai_tools(registry.schemas(), strict=True)``): for every tool whose
    arguments the registry validates, the ``null`` of an optional property
    whose schema does not admit ``null`` is dropped before validation, so the
    body sees the property absent (a property both optional and nullable keeps
    its ``null``); see ``relax_strict_arguments``.

    Raised errors (``ValueError``): an unknown ``mode``;
    ``max_parallel_sub_calls must be a positive integer`` (and the same for
    ``max_sub_calls``); ``max_run_code_chars must be a positive integer or None``.
    """

    def __init__(
        self,
        mode: PresentationMode = "native",
        code_runtime: CodeRuntime | None = None,
        approval: ApprovalService | None = None,
        max_parallel_sub_calls: int = 10,
        log: Any = None,
        max_sub_calls: int = 1000,
        max_run_code_chars: int | None = DEFAULT_RUN_CODE_CHARS,
        relax_strict_nulls: bool = False,
    ) -> None:
        self.mode: PresentationMode = _check_mode(mode)
        if type(relax_strict_nulls) is not bool:
            raise TypeError("relax_strict_nulls must be a bool")
        self.relax_strict_nulls = relax_strict_nulls
        if type(max_parallel_sub_calls) is not int or max_parallel_sub_calls < 1:
            raise ValueError("max_parallel_sub_calls must be a positive integer")
        if type(max_sub_calls) is not int or max_sub_calls < 1:
            raise ValueError("max_sub_calls must be a positive integer")
        if max_run_code_chars is not None and (type(max_run_code_chars) is not int or max_run_code_chars < 1):
            raise ValueError("max_run_code_chars must be a positive integer or None")
        self.max_sub_calls = max_sub_calls
        self.max_run_code_chars = max_run_code_chars
        self.code_runtime = code_runtime
        if code_runtime is not None:
            mount_code_mode()
        self.approval = approval
        self.max_parallel_sub_calls = max_parallel_sub_calls
        self.log = log
        self._registry = self
        self._owner = None
        self._global = _Layer()
        self._scopes: dict[Hashable, ToolScope] = {}
        self._pre: tuple[ListenerEntry, ...] = ()
        self._wrappers: tuple[ListenerEntry, ...] = ()
        self._post: tuple[ListenerEntry, ...] = ()
        self._observers: tuple[ListenerEntry, ...] = ()
        self._changes: tuple[ListenerEntry, ...] = ()
        self._assemblers: tuple[ListenerEntry, ...] = ()
        self._dispatch_log: tuple[ListenerEntry, ...] = ()
        self._calls: tuple[ListenerEntry, ...] = ()
        # Bumped on every tool/mask/presentation change (scope views cache on it)
        # and on every listener change (listener snapshots cache on it).
        self._version = 0
        self._listener_version = 0
        self._global_listeners: ListenerSnapshot | None = None
        self._run_code: dict[str, CompiledTool] = {}

    def __repr__(self) -> str:
        return f"<ToolRegistry mode={self.mode!r} tools={len(self._global.tools)} scopes={len(self._scopes)}>"

    def _layer(self) -> _Layer:
        return self._global

    # --- scopes ---------------------------------------------------------------------

    def scope(self, agent: Hashable, parent: ToolScope | None = None) -> ToolScope:
        """Create the live scope for ``agent`` (any hashable key), optionally under ``parent``.

        Raised errors: ``ValueError`` if a live scope for ``agent`` exists or
        ``parent`` is disposed or belongs to another registry; ``TypeError`` for
        an unhashable ``agent`` or a ``parent`` that is not a ``ToolScope``.
        """
        hash(agent)
        if agent is None:
            raise ValueError("scope(): agent must not be None (None means the global layer)")
        if parent is not None:
            if not isinstance(parent, ToolScope):
                raise TypeError(f"scope(): parent must be a ToolScope, got {type(parent).__name__}")
            if parent._registry is not self or parent.disposed:
                raise ValueError("scope(): parent must be a live scope of this registry")
        if agent in self._scopes:
            raise ValueError(f"scope(): a live scope for agent {agent!r} already exists")
        scope = ToolScope(self, agent, parent)
        self._scopes[agent] = scope
        if parent is not None:
            parent._children.append(scope)
        self._version += 1
        self._listeners_changed()
        return scope

    def _forget_scope(self, scope: ToolScope) -> None:
        if self._scopes.get(scope.agent) is scope:
            del self._scopes[scope.agent]
        if scope.parent is not None and scope in scope.parent._children:
            scope.parent._children.remove(scope)
        self._version += 1
        self._listeners_changed()

    def _scope_arg(self, scope: ToolScope | Hashable | None) -> ToolScope | None:
        if scope is None or isinstance(scope, ToolScope):
            return scope
        return self._scopes.get(scope)

    def chain_for(self, agent: Hashable | None) -> tuple[ToolScope, ...]:
        """The scope chain (nearest first) of a call made as ``agent``; ``()`` for the global view."""
        if agent is None or not self._scopes:
            return ()
        scope = self._scopes.get(agent)
        return () if scope is None else scope.chain

    # --- registrations ---------------------------------------------------------------

    def _register(self, definition: ToolDefinition, scope: ToolScope | None, layer: _Layer) -> Disposer:
        compiled = check_for_registration(definition)
        name = compiled.name
        if name in layer.tools:
            if scope is None:
                raise ValueError(
                    f'tool "{name}" is already registered (for a per-agent variant, register'
                    " through that agent's scope, registry.scope(agent), instead)"
                )
            raise ValueError(f'tool "{name}" is already registered in this scope')
        layer.tools[name] = compiled
        self._version += 1
        agent = None if scope is None else scope.agent
        try:
            self._notify_changes(ToolChange("register", name, agent), contain=False)
        except BaseException:
            if layer.tools.get(name) is compiled:
                del layer.tools[name]
            self._version += 1
            raise

        def dispose() -> None:
            if layer.tools.get(name) is compiled:
                del layer.tools[name]
                self._changed(ToolChange("unregister", name, agent))

        return Disposer(dispose)

    def _add_listener(self, attr: str, fn: Callable[..., Any], scope: ToolScope | None, prepend: bool) -> Disposer:
        if scope is not None and scope.disposed:
            raise ValueError(f"scope {scope.agent!r} is disposed")
        _check_listener(_METHOD_OF[attr], fn, sync_only=False)
        entry = ListenerEntry(fn, scope)
        current: tuple[ListenerEntry, ...] = getattr(self, attr)
        setattr(self, attr, (entry, *current) if prepend else (*current, entry))
        self._listeners_changed()

        def dispose() -> None:
            entry.alive = False
            setattr(self, attr, tuple(item for item in getattr(self, attr) if item is not entry))
            self._listeners_changed()

        return Disposer(dispose)

    def _changed(self, change: ToolChange) -> None:
        self._version += 1
        self._notify_changes(change, contain=True)

    def _notify_changes(self, change: ToolChange, *, contain: bool) -> None:
        for entry in self._changes:
            if not entry.alive:
                continue
            if contain:
                try:
                    entry.fn(change)
                except Exception:
                    _log.warning("on_change listener %r raised", entry.fn, exc_info=True)
            else:
                entry.fn(change)

    def restrict(self, *, allow: Iterable[str] | None = None, deny: Iterable[str] | None = None) -> Disposer:
        """Always raises ``ValueError``: masks exist only on scopes (``restrict() requires a scoped context ...``)."""
        raise ValueError(UNSCOPED_RESTRICT)

    def present_as(self, mode: PresentationMode) -> Disposer:
        """Always raises ``ValueError``: use ``ToolRegistry(mode=...)`` or a scope's ``present_as``."""
        raise ValueError(UNSCOPED_PRESENT_AS)

    def set_code_runtime(self, runtime: CodeRuntime | None, *, mode: PresentationMode | None = None) -> None:
        """Mount ``runtime`` for Code Mode (``None`` unmounts it), and select the deployment ``mode`` if given.

        For a registry built before its runtime, or one that changes runtime:
        ``registry.set_code_runtime(PythonSubprocessRuntime(), mode="code")`` is
        ``ToolRegistry(mode="code", code_runtime=...)`` after the fact. Without
        ``mode`` the deployment presentation stays as it is. Assemblies, the SDK
        text and ``run_code`` calls started from now on use the new runtime; a
        run already started keeps the runtime it started with. Closing the old
        runtime is the caller's business. Notifies ``on_change`` listeners
        (kind ``present_as``, no agent).

        Raised errors: ``ValueError`` for an unknown ``mode``.
        """
        checked = self.mode if mode is None else _check_mode(mode)
        if runtime is not None:
            mount_code_mode()
        self.code_runtime = runtime
        self.mode = checked
        self._changed(ToolChange("present_as", None, None))

    def unknown_tool_error(self, name: str, chain: tuple[ToolScope, ...]) -> ToolNotFoundError:
        """The ``UNKNOWN_TOOL`` error for a call of ``name`` that ``chain`` does not resolve.

        ``unknown tool "<name>"``; for ``run_code`` when a runtime is mounted
        but no presentation was ever chosen (a native deployment and no scope
        that declared ``present_as``: a forgotten ``mode=``), the same text
        followed by how to offer it. Where scopes choose their presentation,
        a native caller's view is deliberate and the text stays plain.
        """
        if name == RUN_CODE_NAME and self.code_runtime is not None and self._runtime_unused():
            return ToolNotFoundError(
                f'unknown tool "{name}": a code runtime is mounted but this caller\'s presentation is "native";'
                ' set the mode to offer run_code: ToolRegistry(mode="code", code_runtime=...) or "both",'
                ' registry.set_code_runtime(runtime, mode="code"), or present_as("code") on the scope'
            )
        return ToolNotFoundError.unknown(name)

    def _runtime_unused(self) -> bool:
        """Whether presentation was never chosen: a native deployment and no live scope that ``present_as``."""
        if self.mode != "native":
            return False
        return all(scope.layer.presentation is None for scope in self._scopes.values())

    # --- views -----------------------------------------------------------------------

    def _inherited_names(self, scope: ToolScope) -> set[str]:
        names = set(self._global.tools)
        ancestor = scope.parent
        while ancestor is not None:
            names.update(ancestor.layer.tools)
            ancestor = ancestor.parent
        return names

    def view(self, chain: tuple[ToolScope, ...]) -> dict[str, CompiledTool]:
        """Name -> compiled tool as the chain sees it, in schema order (do not mutate)."""
        if not chain:
            return self._global.tools
        nearest = chain[0]
        cached = nearest._view_cache
        if cached is not None and cached[0] == self._version:
            return cached[1]
        view = dict(self._global.tools)
        for scope in reversed(chain):
            masks = scope.layer.masks
            if masks:
                view = {n: t for n, t in view.items() if all(m.admits(n) for m in masks)}
            own = scope.layer.tools
            if own:
                for name in own:
                    view.pop(name, None)
                view.update(own)
        nearest._view_cache = (self._version, view)
        return view

    def presentation(self, chain: tuple[ToolScope, ...]) -> PresentationMode:
        """The presentation a chain uses: the nearest ``present_as``, else ``mode``."""
        for scope in chain:
            mode = scope.layer.presentation
            if mode is not None:
                return mode
        return self.mode

    def run_code_tool(self) -> CompiledTool:
        """The compiled ``run_code`` transport for the mounted runtime's language."""
        language = getattr(self.code_runtime, "language", None) if self.code_runtime else None
        key = language if type(language) is str else "typescript"
        compiled = self._run_code.get(key)
        if compiled is None:
            compiled = self._run_code[key] = run_code_tool(self, key)
        return compiled

    def resolve(self, name: str, chain: tuple[ToolScope, ...]) -> CompiledTool | None:
        """The tool a call named ``name`` from ``chain`` runs, or ``None``."""
        if name == RUN_CODE_NAME:
            if self.presentation(chain) == "native":
                return None
            return self.run_code_tool()
        return self.view(chain).get(name)

    def _listeners_changed(self) -> None:
        # Every listener snapshot is stale: bump the version (scoped caches compare it) and drop
        # the global snapshot.
        self._listener_version += 1
        self._global_listeners = None

    @property
    def version(self) -> int:
        """A counter bumped by every change of tools, masks, presentations and scopes.

        A call reuses the tool it resolved at entry while this is unchanged.
        """
        return self._version

    def guards_of(self, scope: ToolScope | None) -> tuple[ListenerEntry, ...]:
        """The guards registered now in the global layer (``None``) or in ``scope``'s own layer (do not mutate)."""
        return self._global.guards if scope is None else scope.layer.guards

    def guarded(self, chain: tuple[ToolScope, ...]) -> bool:
        """Whether a call from ``chain`` has any guard to run now."""
        if self._global.guards:
            return True
        for scope in chain:
            if scope.layer.guards:
                return True
        return False

    def entry_view(
        self, name: str, chain: tuple[ToolScope, ...]
    ) -> tuple[CompiledTool | None, ListenerSnapshot, bool, int]:
        """What a call of ``name`` from ``chain`` sees now, in one read.

        ``(tool, listeners, guarded, version)``: the tool it resolves (``None``
        for ``run_code``, resolved at dispatch, and for unknown names), its
        listener snapshot, whether any guard applies, and :attr:`version`.
        """
        if not chain:
            listeners = self._global_listeners
            if listeners is None:
                listeners = self.listeners_for(chain)
            tool = None if name == RUN_CODE_NAME else self._global.tools.get(name)
            return tool, listeners, bool(self._global.guards), self._version
        tool = None if name == RUN_CODE_NAME else self.view(chain).get(name)
        return tool, self.listeners_for(chain), self.guarded(chain), self._version

    def listeners_for(self, chain: tuple[ToolScope, ...]) -> ListenerSnapshot:
        """The pipeline listeners of a call from ``chain``, in run order (cached until listeners change)."""
        if not chain:
            snapshot = self._global_listeners
            if snapshot is None:
                snapshot = self._global_listeners = self._filter_listeners(frozenset())
            return snapshot
        version = self._listener_version
        nearest = chain[0]
        cached = nearest._listener_cache
        if cached is not None and cached[0] == version:
            return cached[1]
        snapshot = self._filter_listeners(frozenset(chain))
        nearest._listener_cache = (version, snapshot)
        return snapshot

    def dispatch_log_listeners(self, chain: tuple[ToolScope, ...]) -> tuple[Callable[..., Any], ...]:
        """The ``on_code_dispatch_log`` listeners of a call from ``chain``, in waterfall order."""
        scopes = frozenset(chain)
        return tuple(e.fn for e in self._dispatch_log if e.scope is None or e.scope in scopes)

    def _filter_listeners(self, scopes: frozenset[ToolScope]) -> ListenerSnapshot:
        def pick(entries: tuple[ListenerEntry, ...]) -> tuple[ListenerEntry, ...]:
            return tuple(e for e in entries if e.scope is None or e.scope in scopes)

        return ListenerSnapshot(
            pick(self._pre),
            pick(self._wrappers),
            pick(self._post),
            pick(self._observers),
            pick(self._calls),
        )

    def get(self, name: str, scope: ToolScope | Hashable | None = None) -> ToolDefinition | None:
        """The definition ``scope`` (a ``ToolScope`` or an agent key; ``None`` = global) resolves ``name`` to.

        ``None`` for unknown or restricted-away names, and for ``run_code``
        where the scope's presentation is native.
        """
        resolved = self._scope_arg(scope)
        if scope is not None and resolved is None:
            chain: tuple[ToolScope, ...] = ()
        else:
            chain = () if resolved is None else resolved.chain
        compiled = self.resolve(name, chain)
        return None if compiled is None else compiled.definition

    def _visible(self, scope: ToolScope | Hashable | None) -> tuple[tuple[ToolScope, ...], list[CompiledTool]]:
        resolved = self._scope_arg(scope)
        chain = () if resolved is None else resolved.chain
        tools = list(self.view(chain).values())
        if self.presentation(chain) != "native":
            tools.append(self.run_code_tool())
        return chain, tools

    def schemas(self, scope: ToolScope | Hashable | None = None) -> list[ToolSchema]:
        """``{name, description, parameters}`` of every tool ``scope`` sees, in registration order.

        Inherited tools come first (global first), then the scope's own; a
        shadowed name appears once; ``run_code`` is last under ``both`` and
        ``code``. Each call returns fresh deep copies.

        Raised errors: ``ValueError`` ``tool "<name>" parameters must be
        lossless JSON before schema projection`` for a raw tool whose
        parameters are not lossless JSON.
        """
        return [_schema_of(tool) for tool in self._visible(scope)[1]]

    def catalog(self, scope: ToolScope | Hashable | None = None) -> list[ToolSchemaEntry]:
        """Catalog entries (name, description, parameters, output schema) of the tools ``scope`` sees.

        Same order and errors as :meth:`schemas`; ``run_code`` is never listed
        (the SDK describes the end tools).
        """
        out: list[ToolSchemaEntry] = []
        for tool in self._visible(scope)[1]:
            if tool.name == RUN_CODE_NAME:
                continue
            schema = _schema_of(tool)
            out.append(
                ToolSchemaEntry(
                    schema["name"],
                    schema["description"],
                    schema["parameters"],
                    snapshot_json(tool.output_schema, freeze=False),
                )
            )
        return out

    def assemble(
        self, scope: ToolScope | Hashable | None = None, tool_order: Sequence[str] | None = None
    ) -> PromptAssembly:
        """The prompt assembly for ``scope``: tool schemas in order plus prompt sections.

        ``native``: every visible tool's schema, no sections. ``code``/``both``:
        see ``docs/registry.md`` (the ``run_code`` transport; sections come
        from the Code Mode provider). ``tool_order`` names tools to put first,
        in that order. ``on_assemble`` listeners then run as a waterfall and
        the last one's returned assembly is authoritative.

        Raised errors (``ValueError``): ``tool_order lists unregistered tool
        "<name>"``; in a non-native mode without a runtime, ``dsh_codegen: mode
        "<mode>" requires a code runtime ...``.
        """
        resolved = self._scope_arg(scope)
        mode = self.presentation(() if resolved is None else resolved.chain)
        if mode != "native":
            sdk_renderer(self, mode)  # runtime problems reject the assembly first
        chain, tools = self._visible(scope)
        base = assemble_for(self, mode, tools, chain, tool_order)
        assemblers = [e for e in self._assemblers if e.scope is None or e.scope in frozenset(chain)]
        return run_assemble_listeners([e.fn for e in assemblers], base)

    # --- execution -------------------------------------------------------------------

    def execute(
        self, input: ToolExecutionInput, *, gate: PipelineGate | None = None
    ) -> Coroutine[Any, Any, ToolExecutionResult]:
        """Run one call through the whole pipeline and return its frozen result.

        Never raises for tool, policy or argument failures (they are results);
        raises ``TypeError`` for a malformed ``input`` (not a call description),
        and ``CallDeferred`` for a call suspended inside a
        :func:`~dsh_codegen.registry.suspension_scope` (its approval answered
        ``"deferred"``: no result, nothing committed).
        ``gate`` lets a scheduler order policy and commits (see ``PipelineGate``).

        Cancellation: the caller's ``input.signal`` aborting yields
        ``ABORTED_BEFORE_DISPATCH`` (body not started) or ``ABORTED``
        (replacing only a success). When the body's signal aborts (the
        caller's, a wrapper's deadline, or a cancellation of the awaiting
        task) the body is cancelled as a task is (its pending ``await``
        raises ``CancelledError``) and the registry waits until it settles.
        If the awaiting task is cancelled while a body runs, the registry
        aborts the body's signal (an ``AbortError``), cancels and waits for
        the body (absorbing further cancellations), records ``ABORTED`` (or
        the body's own failure, which is more specific), runs
        ``finalize_content`` and ``on_result`` exactly once, and re-raises the
        ``CancelledError``, so ``asyncio.timeout()`` and ``TaskGroup`` work as
        usual. Nothing else a body raises escapes (only ``KeyboardInterrupt``
        and ``SystemExit``). A cancellation arriving in a policy stage (listeners, wrappers,
        the gate) is delivered there; the call then records
        ``ABORTED_BEFORE_DISPATCH`` (or ``ABORTED`` if a body already ran).

        (A plain method returning the pipeline coroutine: one frame less per call.
        With an ``on_execute`` hook anywhere on the registry, the pipeline runs
        inside :func:`run_hooked`, which settles the hooks.)
        """
        if self._calls:
            return run_hooked(self, input, gate)
        return run_pipeline(self, input, gate)

    def execution_mode(self, input: ToolExecutionInput) -> Literal["parallel", "exclusive"]:
        """``"parallel"`` only when the visible tool's ``is_concurrency_safe`` is ``True``, or a
        classifier whose ``is_concurrency_safe(args)`` returns exactly ``True``.

        Unknown, hidden, code-collapsed or unclassified tools (``None``,
        ``False``), invalid ``define_tool`` arguments and raising classifiers
        give ``"exclusive"``. Raw definitions get the arguments as given.
        """
        name = input.name
        arguments = input.arguments
        agent = input.agent
        parent = input.parent
        chain = self.chain_for(agent)
        compiled = self.resolve(name, chain)
        if compiled is None:
            return "exclusive"
        if name != RUN_CODE_NAME and parent is None and self.presentation(chain) == "code":
            return "exclusive"
        classify = compiled.definition.is_concurrency_safe
        if classify is None or classify is False:
            return "exclusive"
        args = soft_arguments(compiled.definition, arguments)
        if args is MALFORMED:
            return "exclusive"
        if classify is True:
            return "parallel"
        try:
            verdict = classify(args)
        except Exception:
            return "exclusive"
        return "parallel" if verdict is True else "exclusive"


def _schema_of(tool: CompiledTool) -> ToolSchema:
    try:
        parameters = snapshot_json(tool.parameters, freeze=False)
    except (LosslessJsonError, RecursionError) as exc:
        raise ValueError(f'tool "{tool.name}" parameters must be lossless JSON before schema projection') from exc
    return {"name": tool.name, "description": tool.definition.description, "parameters": parameters}
