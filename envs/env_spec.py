"""Env specs: the one string that names an env, everywhere (CLI, launcher, config.toml).

    squared                      a built-in native env, or a plugin's (entry points, env_plugins.py)
    gym:CartPole-v1              a registered Gymnasium id; --env.KEY V go to gymnasium.make
    my_pkg.envs:make_env         a callable returning a gymnasium.Env or a PettingZoo ParallelEnv,
                                 or a NativeEnv / PufferEnv class
    pz:my_pkg.envs:make_env      a PettingZoo ParallelEnv creator

`resolve_spec(spec)` gives an object with a native env class's interface (description,
palette, settings_schema, resolve, layout), plus `make_creator(settings)` for vec.make, so
the config, the trainer, the engine and the policy loader need not know which kind it is.
The `import` setting (`--env.import MODULE`, several comma-separated) is imported before
gymnasium.make; ids with a known prefix (ALE/, MiniGrid-, BabyAI-) import theirs themselves,
and so do ale-py's ids without one (BreakoutNoFrameskip-v4, the name SB3's and rl-zoo's docs use).
Importing this module needs gymnasium and numpy, never torch.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import inspect
import os
import re
import sys
from pathlib import Path

from puffer_tui.engine.native import EnvLayout, NativeEnv, PufferEnv, Setting
from puffer_tui.envs.atari_ids import is_atari_id

GYM_PREFIX = "gym:"
PZ_PREFIX = "pz:"
# `--env.ale-vector false`: Atari through Gymnasium's wrappers, one env per game, instead
# of ale-py's C++ vector env
ALE_VECTOR_KEY = "ale_vector"
IMPORT_KEY = "import"
# A Gymnasium id prefix -> the module that registers those ids on import and its pip extra.
AUTO_IMPORTS = (("ALE/", "ale_py"), ("MiniGrid-", "minigrid"), ("BabyAI-", "minigrid"))
# Packages that register ids with no prefix of their own (ale-py's PongNoFrameskip-v4): tried,
# when installed, for an id no prefix rule or --env.import makes known.
UNPREFIXED_IMPORTS = ("ale_py",)
EXTRAS = {"ale_py": "atari", "minigrid": "minigrid", "pettingzoo": "pettingzoo",
          "mpe2": "pettingzoo"}
GYM_PRESETS = Path(__file__).parent / "gym_presets"
# A PufferEnv constructor's own arguments (the vectorizers pass them): not env settings.
CONSTRUCTOR_ARGUMENTS = ("self", "num_envs", "seed", "buf", "log_interval", "render_mode")


class EnvSpecError(ValueError):
    """An env spec that cannot be built; the text says why and what would fix it."""


def install_hint(module: str) -> str:
    top = module.split(".")[0]
    extra = EXTRAS.get(top)
    if extra:
        return f'pip install "puffer-tui[{extra}]"'
    return f"pip install the package that provides {top!r}, or put it on PYTHONPATH"


def import_module(name: str, needed_by: str):
    """The module `name`, or EnvSpecError telling a missing module from one that fails."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        missing = e.name or name
        if name == missing or name.startswith(missing + "."):
            raise EnvSpecError(f"{needed_by} needs the module {name!r}, which is not "
                               f"installed: {install_hint(missing)}") from None
        raise EnvSpecError(f"{needed_by}: importing {name} failed because module {missing!r} "
                           f"is not installed: {install_hint(missing)}") from None
    except Exception as e:
        raise EnvSpecError(f"{needed_by}: importing {name} failed: "
                           f"{type(e).__name__}: {e}") from None


def imports_of(settings: dict) -> tuple[str, ...]:
    value = settings.get(IMPORT_KEY, ())
    if isinstance(value, str):
        value = value.split(",")
    return tuple(m.strip() for m in value if str(m).strip())


def gym_imports(env_id: str, settings: dict) -> tuple[str, ...]:
    auto = tuple(module for prefix, module in AUTO_IMPORTS if env_id.startswith(prefix))
    return auto + imports_of(settings)


def unprefixed_import(env_id: str) -> str | None:
    """The module of UNPREFIXED_IMPORTS that registers `env_id` (imported now if Gymnasium
    does not know the id yet), else None: a worker process must import it too."""
    import gymnasium

    for module in UNPREFIXED_IMPORTS:
        if env_id not in gymnasium.registry:
            try:
                importlib.import_module(module)
            except ImportError:
                continue
        spec = gymnasium.registry.get(env_id)
        if spec is not None and re.split(r"[.:]", str(spec.entry_point))[0] == module:
            return module
    return None


def atari_frameskip_problem(env_id: str) -> str | None:
    """Why a new run refuses an Atari id, or None: the ids whose emulator skips a random 2 to
    4 frames a step (Pong-v4, Pong-v0) cannot be played as registered, since the preprocessing
    skips a fixed 4 frames itself (and max-pools the last two)."""
    import gymnasium

    spec = gymnasium.registry.get(env_id)
    if spec is None or not is_atari_id(env_id):
        return None
    if not isinstance(spec.kwargs.get("frameskip"), (tuple, list)):
        return None
    game = env_id.split("/")[-1].split("-")[0]
    sticky = spec.kwargs.get("repeat_action_probability", 0.0)
    version = env_id.rsplit("-", 1)[-1]
    known_as = ", SB3's and rl-zoo's id" if version == "v4" else ""
    return (f"gym:{env_id} skips a random 2 to 4 frames a step, which the Atari preprocessing "
            f"(a fixed skip of 4, max-pooled) cannot keep; use gym:{game}NoFrameskip-{version} "
            f"(the same game, sticky actions {sticky:g}{known_as}) or gym:ALE/{game}-v5")


def make_gym_env(env_id: str, imports: tuple = (), evaluation: bool = False, **kwargs):
    """One Gymnasium env of a registered id (module level: it pickles into workers, which
    import the registering modules themselves). `evaluation`: Atari plays whole games (no
    episode end per lost life, which only helps training)."""
    for module in imports:
        importlib.import_module(module)
    if is_atari_id(env_id):
        try:
            # cycle: importing envs.atari_preprocessing loads this module
            from puffer_tui.envs.atari_preprocessing import atari_env
        except ImportError:
            atari_env = None
        if atari_env is not None:
            return atari_env(env_id, training=not evaluation, **kwargs)
    import gymnasium

    return gymnasium.make(env_id, **kwargs)


class PythonEnvSource:
    """A Python env (Gymnasium, PettingZoo, a PufferEnv class) behind the native class API.

    Settings are the kwargs of the env's constructor: those with a plain default are typed
    (settings_schema); any other name is passed through as given (`open_settings`)."""

    palette: dict = {}
    python = True
    open_settings = True

    def __init__(self, spec: str, description: str, settings_schema: tuple = ()):
        self.spec = self.name = spec
        self.description = description
        self.settings_schema = settings_schema
        self._layouts: dict = {}

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.spec}>"

    def check_settings(self, given: dict) -> dict:
        """The given settings with declared ones converted to their types (no defaults added:
        what the user gave is what config.toml keeps and the constructor gets)."""
        declared = {s.name: s for s in self.settings_schema}
        checked = {}
        for key, value in given.items():
            setting = declared.get(key)
            checked[key] = value if setting is None else _typed(self.spec, setting, value)
        imports_of(checked)
        return checked

    def resolve(self, settings: dict) -> dict:
        return self.check_settings(dict(settings))

    def make_creator(self, settings: dict, evaluation: bool = False):
        """A picklable creator for vec.make; `evaluation`: built to play, not to train."""
        raise NotImplementedError

    def layout(self, settings: dict):
        """The spaces as the vectorizers will see them: the one env its creator built to check
        them says (creator.layout); otherwise one env is built to ask."""
        key = repr(sorted(settings.items()))
        if key not in self._layouts:
            creator = _built(self.spec, lambda: self.make_creator(settings))
            known = getattr(creator, "layout", None)
            if known is not None:
                self._layouts[key] = known
            else:
                env = _built(self.spec, lambda: creator(num_envs=1, seed=0))
                try:
                    self._layouts[key] = EnvLayout(env.single_observation_space,
                                                   env.single_action_space, env.agents_per_env)
                finally:
                    env.close()
        return self._layouts[key]

    def preset(self, settings: dict | None = None) -> dict:
        """The sections of preset_path() ({} when there is none)."""
        # cycle: importing envs.gym_presets.family loads this module
        from puffer_tui.envs.gym_presets.family import read_preset_file

        path = self.preset_path(settings)
        return read_preset_file(path) if path is not None else {}

    def preset_path(self, settings: dict | None = None):
        """The preset for this env's family (envs/gym_presets/family.py), or None. `settings`:
        the env's settings for this run, so that the env built to tell its family is the one
        the run's checks then use (built once, not once per settings)."""
        # cycle: importing envs.gym_presets.family loads this module
        from puffer_tui.envs.gym_presets.family import family_of, family_path

        family = family_of(self, settings)
        return family_path(family) if family else None


def _built(spec: str, build):
    """build(), its failure (other than a spec error) named as the spec's own."""
    try:
        return build()
    except EnvSpecError:
        raise
    except Exception as e:
        raise EnvSpecError(f"{spec} cannot be built: {type(e).__name__}: {e}") from None


def _typed(spec: str, setting, value):
    kind = setting.type
    try:
        if kind is bool and isinstance(value, bool) or kind is str and isinstance(value, str):
            return value
        if kind in (int, float) and not isinstance(value, bool) and isinstance(value, (int, float)):
            if kind is int and not float(value).is_integer():
                raise ValueError
            return kind(value)
    except (TypeError, ValueError):
        pass
    raise EnvSpecError(f"{spec}: setting {setting.name} = {value!r} must be a {kind.__name__} "
                       f"(its default is {setting.default!r})")


def _signature_settings(creator, defaults: dict, help_text: str) -> tuple:
    """Settings from a constructor's keyword defaults of plain types (bool, int, float, str)."""
    try:
        params = inspect.signature(creator).parameters.values()
    except (TypeError, ValueError):
        params = ()
    settings = {}
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name in CONSTRUCTOR_ARGUMENTS:
            continue
        default = defaults.get(p.name, p.default)
        if isinstance(default, (bool, int, float, str)):
            settings[p.name] = Setting(p.name, default, help=help_text)
    for name, default in defaults.items():
        if name not in settings and isinstance(default, (bool, int, float, str)):
            settings[name] = Setting(name, default, help=help_text)
    return tuple(settings.values())


# -- gym:ID -------------------------------------------------------------------------------------


class GymSource(PythonEnvSource):
    def __init__(self, spec: str):
        self.env_id = spec[len(GYM_PREFIX):]
        if not self.env_id:
            raise EnvSpecError(f"{spec!r} names no id; e.g. gym:CartPole-v1")
        self._imported: set = set()
        self._unprefixed: tuple = ()  # the module that registers an id with no prefix rule
        try:
            gym_spec = self._gym_spec({})
        except EnvSpecError:
            gym_spec = None  # maybe registered by an --env.import: check_settings says
        super().__init__(spec, f"Gymnasium {self.env_id}", _gym_settings(gym_spec))
        if gym_spec is not None:
            self.description += f" ({gym_spec.entry_point})"
        # lazy: the ports load their C bindings
        from puffer_tui.envs.classic_ports import NATIVE_KEY, port_of

        port = port_of(self.env_id)
        if port is not None:  # stepped in C unless told otherwise: sized as a native env
            self.python = False
            self.description += f", stepped by its C port {port.name}"
            self.palette = dict(port.palette)  # its frames are tiles
            self.settings_schema += (Setting(
                NATIVE_KEY, True, help=f"step through the C port {port.name} (Gymnasium's "
                f"dynamics); false: Gymnasium's own env"),)

    def steps_in_python(self, settings: dict) -> bool:
        """Whether this env with these settings steps in Python (the config sizes it so)."""
        # lazy: the ports load their C bindings
        from puffer_tui.envs.classic_ports import wants_port

        return not wants_port(self.env_id, settings)

    def _gym_spec(self, settings: dict):
        import gymnasium

        for module in gym_imports(self.env_id, settings):
            if module not in self._imported:
                import_module(module, f"gym:{self.env_id}")
                self._imported.add(module)
        found = unprefixed_import(self.env_id)
        if found:
            self._unprefixed = (found,)
        try:
            return gymnasium.spec(self.env_id)
        except gymnasium.error.Error:
            raise EnvSpecError(unknown_gym_id_message(self.env_id)) from None

    def imports(self, settings: dict) -> tuple[str, ...]:
        """The modules a worker imports before gymnasium.make: the prefix rule's, the
        --env.import ones, and the one found to register an id with no prefix."""
        given = gym_imports(self.env_id, settings)
        return given + tuple(m for m in self._unprefixed if m not in given)

    def check_settings(self, given: dict) -> dict:
        # lazy: the ports load their C bindings
        from puffer_tui.envs.classic_ports import check_port_values

        checked = super().check_settings(given)
        self._gym_spec(checked)  # an --env.import that registers the id, or fails clearly
        problem = check_port_values(self.env_id, checked)  # the port could not be built
        if problem:
            raise EnvSpecError(f"{self.spec}: {problem}")
        return checked

    def check_new_settings(self, settings: dict) -> None:
        """A new run's settings, beyond check_settings: what a saved config may hold from
        before (and resume, eval must still read) but a new run is refused."""
        # lazy: the ports load their C bindings
        from puffer_tui.envs.classic_ports import check_native_setting

        problem = check_native_setting(self.env_id, settings)
        if problem:
            raise EnvSpecError(f"{self.spec}: {problem}")
        problem = atari_frameskip_problem(self.env_id)
        if problem:
            raise EnvSpecError(problem)

    def make_creator(self, settings: dict, evaluation: bool = False):
        # lazy: the ports load their C bindings; cycle: importing envs.gym_emulation loads
        # this module
        from puffer_tui.envs.classic_ports import NATIVE_KEY, port_creator
        from puffer_tui.envs.gym_emulation import from_gymnasium

        port = _built(self.spec, lambda: port_creator(self.env_id, settings))
        if port is not None:  # a C port of the same env (envs/classic_ports.py)
            return port
        kwargs = {k: v for k, v in settings.items() if k not in (IMPORT_KEY, NATIVE_KEY)}
        if kwargs.get("max_episode_steps") == 0:  # none: the id's own registration
            del kwargs["max_episode_steps"]
        if is_atari_id(self.env_id) and kwargs.pop(ALE_VECTOR_KEY, True) not in (
                False, "false"):
            # cycle: importing envs.ale_vector loads this module
            from puffer_tui.envs.ale_vector import ale_vector_creator

            # ale-py's C++ vector env when it can do what was asked (envs/ale_vector.py)
            creator = _built(self.spec, lambda: ale_vector_creator(self.env_id, evaluation,
                                                                   **kwargs))
            if creator is not None:
                return creator
        kwargs.pop(ALE_VECTOR_KEY, None)
        make = functools.partial(make_gym_env, self.env_id, self.imports(settings), evaluation)
        try:
            return from_gymnasium(make, **kwargs)
        except Exception as e:
            unknown = _unexpected_keyword(e)
            if unknown in kwargs:  # one of the user's settings, not a fault of ours
                raise EnvSpecError(self._unknown_setting_message(unknown)) from None
            raise EnvSpecError(f"{self.spec} cannot be built: {type(e).__name__}: {e}") from None

    def _constructor_names(self) -> set:
        """Every keyword the id's constructor takes (render_mode too: the schema keeps only
        the plain-typed ones)."""
        try:
            creator = _entry_point(self._gym_spec({}))
            params = inspect.signature(creator).parameters.values()
        except (EnvSpecError, TypeError, ValueError):
            return set()
        return {p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                and p.name != "self"}

    def _unknown_setting_message(self, name: str) -> str:
        """Gymnasium's env refused a keyword: name the flag, the settings it has, the closest."""
        import difflib

        known = sorted(({s.name for s in self.settings_schema} | self._constructor_names())
                       - {IMPORT_KEY})
        flag = f"--env.{name.replace('_', '-')}"
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
        hint = f"; did you mean --env.{close[0].replace('_', '-')}?" if close else ""
        listed = ", ".join(f"--env.{k.replace('_', '-')}" for k in known) or "none"
        return f"{self.spec}: {flag} is not a setting of {self.env_id} (known: {listed}){hint}"

    def preset_path(self, settings: dict | None = None):
        """gym_presets/ID.toml ("/" as "_"), else one for the id's namespace (ALE.toml),
        else one for the part of its name before the first "-" (MiniGrid.toml), else its
        family's (envs/gym_presets/family.py), else None."""
        names = [self.env_id.replace("/", "_")]
        if "/" in self.env_id:
            names.append(self.env_id.split("/")[0])
        elif is_atari_id(self.env_id):
            names.append("ALE")  # PongNoFrameskip-v4 is ALE/Pong-v5's game
        if "-" in self.env_id.split("/")[-1]:
            names.append(self.env_id.split("/")[-1].split("-")[0])
        for name in names:
            path = GYM_PRESETS / f"{name}.toml"
            if path.exists():
                return path
        return super().preset_path(settings)


def _unexpected_keyword(error: Exception) -> str | None:
    """The keyword a constructor refused (`__init__() got an unexpected keyword argument
    'x'`, as Gymnasium passes it on), else None."""
    match = re.search(r"got an unexpected keyword argument '(\w+)'", str(error))
    return match.group(1) if match and isinstance(error, TypeError) else None


def _gym_settings(gym_spec) -> tuple:
    """The id's constructor arguments with plain defaults, and max_episode_steps."""
    if gym_spec is None:
        return ()
    schema = list(_signature_settings(_entry_point(gym_spec), dict(gym_spec.kwargs or {}),
                                      "Gymnasium env argument"))
    if isinstance(gym_spec.max_episode_steps, int):
        schema.append(Setting("max_episode_steps", gym_spec.max_episode_steps, 1, None,
                              "steps before truncation (gymnasium.make)"))
    else:  # an id registered without one (CliffWalking-v1): a run can still give it one
        schema.append(Setting("max_episode_steps", 0, 0, None, "steps before truncation "
                              "(gymnasium.make; 0: none, as the id is registered)"))
    return tuple(schema)


def _entry_point(gym_spec):
    from gymnasium.envs.registration import load_env_creator

    try:
        ep = gym_spec.entry_point
        return load_env_creator(ep) if isinstance(ep, str) else ep
    except Exception:
        return None


def unknown_gym_id_message(env_id: str) -> str:
    import gymnasium

    ids = list(gymnasium.registry)
    close = difflib.get_close_matches(env_id, ids, n=4, cutoff=0.6)
    hint = next((m for p, m in AUTO_IMPORTS if env_id.lower().startswith(p.lower())), None)
    text = f"unknown Gymnasium id {env_id!r}"
    if close:
        text += "; close matches: " + ", ".join(GYM_PREFIX + c for c in close)
    elif hint:
        text += f" (its package {hint} is installed but does not register it)"
    else:
        text += (f" ({len(ids)} ids are registered; a package that registers more can be "
                 f"imported with --env.import MODULE)")
    return text


# -- module.path:callable and pz:module.path:callable -------------------------------------------


class CallableSource(PythonEnvSource):
    """`module:callable`: a gymnasium.Env (class or factory), a PettingZoo ParallelEnv
    factory, or a PufferEnv class; which one is found by building one (or forced by pz:)."""

    def __init__(self, spec: str, target, kind: str | None):
        self.target, self.kind = target, kind
        doc = (inspect.getdoc(target) or "").strip().splitlines()
        settings = _signature_settings(target, {}, "argument of the env's creator")
        super().__init__(spec, doc[0] if doc else f"Python env {spec}", settings)

    @property
    def named_module(self) -> str:
        """The module the spec names, as the user wrote it (the creator's own __module__ may
        be a library's wrapper: mpe2's are pettingzoo.utils.conversions closures)."""
        return self.spec.removeprefix(PZ_PREFIX).partition(":")[0]

    def make_creator(self, settings: dict, evaluation: bool = False):
        kind, probe = (self.kind, None) if self.kind else self._detect(settings)
        if kind == "puffer":
            return functools.partial(self.target, **settings)
        if kind == "pz":
            if probe is not None:
                probe.close()
            try:
                # cycle: importing envs.pettingzoo_emulation loads this module
                from puffer_tui.envs.pettingzoo_emulation import from_pettingzoo
            except ImportError as e:
                raise EnvSpecError(f"{self.spec}: PettingZoo envs need the pettingzoo package "
                                   f"({e}): {install_hint('pettingzoo')}") from None
            return from_pettingzoo(self.target, **settings)
        # cycle: importing envs.gym_emulation loads this module
        from puffer_tui.envs.gym_emulation import from_gymnasium

        return from_gymnasium(self.target, probe=probe, **settings)

    def _detect(self, settings: dict):
        """(kind, the env built to tell: a Gymnasium env is handed on, still open, so that it
        is the only one built before the run's checks; None when the class says)."""
        import gymnasium

        if isinstance(self.target, type) and issubclass(self.target, gymnasium.Env):
            return "gym", None
        try:
            env = self.target(**settings)
        except Exception as e:
            raise EnvSpecError(f"{self.spec}(**{settings!r}) raised {type(e).__name__}: {e}") \
                from None
        if isinstance(env, gymnasium.Env):
            return "gym", env
        if hasattr(env, "possible_agents") and hasattr(env, "step"):
            return "pz", env
        getattr(env, "close", lambda: None)()
        raise EnvSpecError(
            f"{self.spec} returned {type(env).__name__}, not a gymnasium.Env, a PettingZoo "
            f"ParallelEnv or a PufferEnv class; make it return one of these")


def _add_working_dir_to_path() -> None:
    """A user's module in the working directory imports, as under `python -m` (which is how
    the engine runs): the `puffer-tui` script alone would not find it."""
    cwd = os.getcwd()
    if "" not in sys.path and cwd not in sys.path:
        sys.path.append(cwd)


def resolve_callable_spec(spec: str):
    """The class (NativeEnv subclass: used as is) or a CallableSource for `[pz:]module:name`."""
    forced = spec.startswith(PZ_PREFIX)
    path = spec[len(PZ_PREFIX):] if forced else spec
    module_name, _, attr = path.partition(":")
    if not module_name or not attr or ":" in attr:
        raise EnvSpecError(f"{spec!r} is not MODULE:CALLABLE (e.g. my_pkg.envs:make_env); "
                           f"gym:ID for a Gymnasium id, pz:MODULE:CALLABLE for PettingZoo")
    _add_working_dir_to_path()
    module = import_module(module_name, spec)
    target = module
    for part in attr.split("."):
        if not hasattr(target, part):
            public = sorted(n for n, v in vars(module).items()
                            if callable(v) and not n.startswith("_"))
            raise EnvSpecError(
                f"{spec}: module {module_name} has no attribute {attr!r}; its callables: "
                f"{', '.join(public[:12]) or 'none'}")
        target = getattr(target, part)
    if not callable(target):
        raise EnvSpecError(f"{spec}: {attr} is a {type(target).__name__}, not callable; "
                           f"name a function or class that builds the env")
    if isinstance(target, type) and issubclass(target, NativeEnv) and not forced:
        return target
    kind = "pz" if forced else None
    if isinstance(target, type) and issubclass(target, PufferEnv):
        kind = "puffer"
    return CallableSource(spec, target, kind)


@functools.lru_cache(maxsize=64)
def resolve_spec(spec: str):
    """The env source of a `gym:`, `pz:` or `module:callable` spec (cached per process)."""
    if spec.startswith(GYM_PREFIX):
        return GymSource(spec)
    return resolve_callable_spec(spec)


def run_label(spec: str) -> str:
    """The spec as a file-name part: gym:ALE/Pong-v5 -> gym-ALE_Pong-v5."""
    label = spec.replace(":", "-", 1) if spec.startswith((GYM_PREFIX, PZ_PREFIX)) else spec
    return re.sub(r"[^A-Za-z0-9._-]+", "_", label).strip("_.") or "env"


def spec_imports_code(spec: str, settings: dict | None = None) -> str | None:
    """Why building `spec` (with these env settings) imports a module that the spec itself
    names, i.e. runs code chosen by whoever typed it; None for a built-in or installed
    plugin name and a plain Gymnasium id. `serve` refuses such specs from a page."""
    if spec.startswith(GYM_PREFIX):
        env_id = spec[len(GYM_PREFIX):]
        if ":" in env_id:  # gymnasium.make("module:Id") imports module first
            return (f"{spec} imports the module {env_id.partition(':')[0]!r} (gymnasium "
                    f"imports the part before ':')")
        value = (settings or {}).get(IMPORT_KEY)
        if value not in (None, "", (), []):
            return f"{spec} with {IMPORT_KEY} = {value!r} imports that module"
        return None
    if ":" in spec:  # MODULE:CALLABLE or pz:MODULE:CALLABLE (envs/registry.py env_class)
        path = spec[len(PZ_PREFIX):] if spec.startswith(PZ_PREFIX) else spec
        return f"{spec} imports the module {path.partition(':')[0]!r} and calls into it"
    return None
