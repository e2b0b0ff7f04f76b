# ceval's isolation: process, the test process's side (run by the verifier's pytest boot
# before pytest imports the tests). The workspace's modules never load here: each import of
# a name the workspace holds (NAME.py, NAME/) returns a proxy module whose attributes, calls,
# iteration and items are carried out by a separate interpreter (agent_side.py) that holds
# the agent's code. Only plain data crosses back (None, bool, int, float, str, bytes, and
# list, tuple, dict, set, frozenset of those, exactly those types, and pathlib paths); any
# other value stays there and is a handle here, with no truth value and no equality, so
# neither a rewritten test runner nor an always-equal object can reach the verdict. This
# process is non-dumpable (an unreadable copy of python3), so the agent's process can
# neither read nor write it.
def cevalIsolate(agent_source, ws):
    import base64, builtins, json, os, pathlib, socket, struct, subprocess, sys, threading
    from importlib.machinery import ModuleSpec

    MAX = 64 << 20
    def workspace_names():
        """The top-level names the workspace holds now (NAME.py, NAME/, NAME.pyc, NAME.*.so)."""
        names = set()
        try:
            with os.scandir(ws) as entries:
                for e in entries:
                    n, dot, ext = e.name.partition(".")
                    if (dot and ext in ("py", "pyc") or ext.endswith("so")) or (not dot and e.is_dir(follow_symlinks=False)):
                        if n.isidentifier():
                            names.add(n)
        except OSError:
            pass
        return names

    names = workspace_names()

    here, there = socket.socketpair()
    proc = subprocess.Popen(
        ["python3", "-I", "-B", "-c", agent_source, str(there.fileno()), ws],
        pass_fds=(there.fileno(),), cwd=ws, stdin=subprocess.DEVNULL)
    there.close()
    lock = threading.Lock()

    class AgentError(Exception):
        """An exception the agent's code raised, of a class that is not a builtin one."""

    class Gone(RuntimeError):
        pass

    def recv_exact(n):
        b = bytearray()
        while len(b) < n:
            chunk = here.recv(min(n - len(b), 1 << 20))
            if not chunk:
                raise Gone("ceval isolation: the agent's process ended")
            b += chunk
        return bytes(b)

    def rpc(msg):
        data = json.dumps(msg).encode()
        with lock:
            try:
                here.sendall(struct.pack(">I", len(data)) + data)
                (n,) = struct.unpack(">I", recv_exact(4))
                if n > MAX:
                    raise Gone("ceval isolation: the agent's process answered over %d bytes" % MAX)
                reply = json.loads(recv_exact(n))
            except (OSError, ValueError, struct.error) as e:
                raise Gone("ceval isolation: the agent's process did not answer: %s" % e) from None
        if type(reply) is not dict:
            raise Gone("ceval isolation: a malformed answer from the agent's process")
        if "err" in reply:
            err = reply["err"]
            if type(err) is not list or len(err) != 2 or type(err[0]) is not str or type(err[1]) is not str:
                raise Gone("ceval isolation: a malformed error from the agent's process")
            cls = getattr(builtins, err[0], None)
            if not (isinstance(cls, type) and issubclass(cls, Exception)) or cls is Gone:
                cls = AgentError
            if "cls" in reply:
                cls = standin(reply["cls"])
            raise cls(err[1])
        return decode(reply.get("v"))

    standins = {}

    def standin(chain):
        """The test process's stand-in for an exception class of the agent's ([[id, name],
        ...], most derived first): a subclass of AgentError (and of the stand-ins of its
        bases), so pytest.raises and except name it; it holds no code of the agent's."""
        if type(chain) is not list or not chain or len(chain) > 64:
            raise Gone("ceval isolation: a malformed exception class from the agent's process")
        base = AgentError
        for link in reversed(chain):
            if type(link) is not list or len(link) != 2 or type(link[0]) is not int or type(link[1]) is not str or not link[1].isidentifier():
                raise Gone("ceval isolation: a malformed exception class from the agent's process")
            cls = standins.get(link[0])
            if cls is None:
                cls = standins[link[0]] = type(link[1], (base,), {"__module__": "agent"})
            base = cls
        return base

    def encode(v, depth=0):
        if depth > 100:
            raise TypeError("ceval isolation: a value nested over 100 deep cannot cross to the agent's process")
        t = type(v)
        if v is None or t in (bool, int, str):
            return v
        if t is float:
            return {"F": repr(v)}
        if t is bytes:
            return {"b": base64.b64encode(v).decode()}
        if t in (list, tuple, set, frozenset):
            return {{list: "l", tuple: "t", set: "s", frozenset: "f"}[t]: [encode(x, depth + 1) for x in v]}
        if t is dict:
            return {"d": [[encode(k, depth + 1), encode(x, depth + 1)] for k, x in v.items()]}
        if isinstance(v, pathlib.PurePath):
            return {"p": str(v)}
        if t is Handle:
            return {"h": object.__getattribute__(v, "_id")}
        raise TypeError("ceval isolation: only plain data (not %s) crosses to the agent's process" % t.__name__)

    def decode(v, depth=0):
        if depth > 100:
            raise Gone("ceval isolation: an answer nested over 100 deep")
        t = type(v)
        if v is None or t in (bool, int, str):
            return v
        if t is list and not depth:
            raise Gone("ceval isolation: a malformed answer from the agent's process")
        if t is not dict or len(v) != 1:
            raise Gone("ceval isolation: a malformed answer from the agent's process")
        (k, x), = v.items()
        if k == "F" and type(x) is str:
            return float(x)
        if k == "b" and type(x) is str:
            return base64.b64decode(x)
        if k in ("l", "t", "s", "f") and type(x) is list:
            items = [decode(i, depth + 1) for i in x]
            return {"l": list, "t": tuple, "s": set, "f": frozenset}[k](items)
        if k == "d" and type(x) is list:
            out = {}
            for pair in x:
                if type(pair) is not list or len(pair) != 2:
                    raise Gone("ceval isolation: a malformed answer from the agent's process")
                out[decode(pair[0], depth + 1)] = decode(pair[1], depth + 1)
            return out
        if k == "p" and type(x) is str:
            return pathlib.Path(x)
        if k == "x":
            return standin(x)
        if k == "h" and type(x) is list and len(x) == 3 and type(x[0]) is int and type(x[1]) is str and type(x[2]) is str:
            return Handle(x[0], x[1], x[2])
        raise Gone("ceval isolation: a malformed answer from the agent's process")

    def no_truth(*_):
        raise TypeError("ceval isolation: a value of the agent's code that is not plain data has no truth value or equality here; compare plain data (str(), int(), list()) it returns")

    def no_operator(*_):
        raise TypeError("ceval isolation: a value of the agent's code that is not plain data takes no operator here; compare plain data (str(), int(), list()) it returns")

    class Handle:
        """A value that stays in the agent's process."""
        __slots__ = ("_id", "_type", "_repr")

        def __init__(self, id, type_name, rep):
            object.__setattr__(self, "_id", id)
            object.__setattr__(self, "_type", type_name)
            object.__setattr__(self, "_repr", rep)

        def __getattr__(self, name):
            if name.startswith("__") and name.endswith("__"):
                raise AttributeError(name)
            return rpc({"op": "getattr", "h": object.__getattribute__(self, "_id"), "name": name})

        def __setattr__(self, name, value):
            rpc({"op": "setattr", "h": object.__getattribute__(self, "_id"), "name": name, "v": encode(value)})

        def __delattr__(self, name):
            rpc({"op": "delattr", "h": object.__getattribute__(self, "_id"), "name": name})

        def __call__(self, *args, **kwargs):
            return rpc({"op": "call", "h": object.__getattribute__(self, "_id"), "args": [encode(a) for a in args],
                        "kwargs": [[k, encode(v)] for k, v in kwargs.items()]})

        def _op(self, op, *args):
            return rpc({"op": op, "h": object.__getattribute__(self, "_id"), "args": [encode(a) for a in args]})

        def __iter__(self):
            it = self._op("iter")
            if type(it) is not Handle:
                return iter(it)
            return _Iter(it)

        def __next__(self):
            return self._op("next")

        def __len__(self):
            n = self._op("len")
            if type(n) is not int:
                raise TypeError("ceval isolation: len() of the agent's value is not an int")
            return n

        def __getitem__(self, key):
            return self._op("getitem", key)

        def __setitem__(self, key, value):
            self._op("setitem", key, value)

        def __delitem__(self, key):
            self._op("delitem", key)

        def __contains__(self, item):
            return self._op("contains", item) is True

        def __str__(self):
            s = self._op("str")
            return s if type(s) is str else object.__getattribute__(self, "_repr")

        def __repr__(self):
            return "<%s of the agent's process: %s>" % (object.__getattribute__(self, "_type"), object.__getattribute__(self, "_repr"))

        def __enter__(self):
            return self._op("enter")

        def __exit__(self, *exc):
            self._op("exit")
            return False

        __bool__ = __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = no_truth
        __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = no_operator
        __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __pow__ = __rpow__ = __neg__ = __pos__ = __abs__ = no_operator
        __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = __matmul__ = __rmatmul__ = no_operator
        __int__ = __float__ = __index__ = __round__ = no_operator
        __hash__ = object.__hash__

    class _Iter:
        def __init__(self, h):
            self.h = h

        def __iter__(self):
            return self

        def __next__(self):
            return self.h._op("next")

    class ProxyModule(type(sys)):
        def __getattr__(self, name):
            if name.startswith("__") and name.endswith("__"):
                raise AttributeError(name)
            h = self.__dict__["_ceval_handle"]
            return getattr(h, name)

        def __setattr__(self, name, value):
            if name.startswith("__") and name.endswith("__") or name == "_ceval_handle" or type(value) is ProxyModule:
                return super().__setattr__(name, value)  # the import system's own, and submodules
            setattr(self.__dict__["_ceval_handle"], name, value)

    class Loader:
        @staticmethod
        def create_module(spec):
            m = ProxyModule(spec.name)
            h = rpc({"op": "import", "name": spec.name})
            if type(h) is not Handle:
                raise ImportError("ceval isolation: %s is not a module" % spec.name, name=spec.name)
            m.__dict__["_ceval_handle"] = h
            return m

        @staticmethod
        def exec_module(module):
            pass

    class Finder:
        @staticmethod
        def find_spec(name, path=None, target=None):
            top = name.partition(".")[0]
            if top not in names and top not in workspace_names():
                return None
            spec = ModuleSpec(name, Loader, is_package=True)
            spec.submodule_search_locations = []
            return spec

        @staticmethod
        def invalidate_caches():
            pass

    sys.meta_path.insert(1, Finder)  # after the image's import guard, before the path finder

    # The workspace's code runs only in the agent's process: none of it compiles, executes,
    # loads as a library or unpickles here, whatever the tests call.
    def under_ws(p):
        try:
            p = os.fsdecode(p)
            if not os.path.isabs(p):
                return False  # "<string>" and the like: not a file's name
            p = os.path.realpath(p)
        except (TypeError, ValueError):
            return False
        return p == ws or p.startswith(ws + "/")

    unsafe = {("builtins", n) for n in ("eval", "exec", "compile", "__import__", "getattr", "setattr", "open", "breakpoint")}

    def hook(event, args):
        if event == "compile" and len(args) > 1 and args[1] is not None and type(args[1]) in (str, bytes) and under_ws(args[1]):
            raise RuntimeError("ceval isolation: %s is the agent's code, which runs only in the agent's process (import it)" % os.fsdecode(args[1]))
        if event == "exec" and args and getattr(args[0], "co_filename", None) and under_ws(args[0].co_filename):
            raise RuntimeError("ceval isolation: the agent's code runs only in the agent's process")
        if event == "ctypes.dlopen" and args and args[0] and under_ws(args[0]):
            raise RuntimeError("ceval isolation: the agent's libraries load only in the agent's process")
        if event == "pickle.find_class" and len(args) == 2:
            mod = str(args[0])
            if mod.partition(".")[0] in names or (mod, str(args[1])) in unsafe or mod.partition(".")[0] in ("os", "posix", "subprocess", "sys", "importlib", "runpy", "code", "ctypes", "marshal", "types"):
                raise RuntimeError("ceval isolation: unpickling %s.%s would run code in the test process" % (mod, args[1]))

    sys.addaudithook(hook)

    class NoWorkspace:
        """The path hook of every sys.path entry in the workspace (a test's
        sys.path.insert(0, "/workspace"), a zip there): it finds nothing, so nothing of the
        workspace imports here through it; the workspace's names come through Finder."""
        def __init__(self, entry):
            p = os.path.abspath(os.fsdecode(entry) or ".")
            if not under_ws(p):
                raise ImportError("not the workspace")

        def find_spec(self, name, target=None):
            return None

        def invalidate_caches(self):
            pass

    sys.path_hooks.insert(0, NoWorkspace)
    sys.path_importer_cache.clear()
    return proc
