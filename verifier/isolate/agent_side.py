# ceval's isolation: process, the agent's side: a plain interpreter, started by the test
# process, that imports the workspace's modules and carries out what the tests ask of them
# (attributes, calls, items, iteration). It answers plain data by value and anything else by
# a handle; it never sees the tests' own objects, only plain data and its own handles.
import base64, builtins, json, os, pathlib, socket, struct, sys

sock = socket.socket(fileno=int(sys.argv[1]))
sys.path.insert(0, sys.argv[2])
sys.argv = ["agent"]
objects = {}
MAX = 64 << 20
PLAIN = (type(None), bool, int, str)


def recv_exact(n):
    b = bytearray()
    while len(b) < n:
        chunk = sock.recv(min(n - len(b), 1 << 20))
        if not chunk:
            raise SystemExit(0)
        b += chunk
    return bytes(b)


def agent_exception(cls):
    """[[id, name], ...] of cls and its bases that are the agent's exception classes, most
    derived first; None unless cls is one."""
    if not (isinstance(cls, type) and issubclass(cls, BaseException)):
        return None
    out = []
    for c in cls.__mro__:
        if getattr(builtins, c.__name__, None) is c:
            break
        objects[id(c)] = c
        out.append([id(c), c.__name__[:100]])
    return out or None


def handle(v):
    x = agent_exception(v)
    if x is not None:
        return {"x": x}
    objects[id(v)] = v
    try:
        rep = repr(v)[:200]
    except Exception:
        rep = "?"
    return {"h": [id(v), type(v).__name__[:100], rep]}


def encode(v, depth=0):
    t = type(v)
    if t in PLAIN:
        return v
    if depth > 100:
        return handle(v)
    if t is float:
        return {"F": repr(v)}
    if t is bytes:
        return {"b": base64.b64encode(v).decode()}
    if t in (list, tuple, set, frozenset):
        return {{list: "l", tuple: "t", set: "s", frozenset: "f"}[t]: [encode(x, depth + 1) for x in v]}
    if t is dict:
        return {"d": [[encode(k, depth + 1), encode(x, depth + 1)] for k, x in v.items()]}
    if t in (pathlib.PosixPath, pathlib.PurePosixPath):
        return {"p": str(v)}
    return handle(v)


def decode(v):
    t = type(v)
    if t in PLAIN:
        return v
    (k, x), = v.items()
    if k == "F":
        return float(x)
    if k == "b":
        return base64.b64decode(x)
    if k in ("l", "t", "s", "f"):
        return {"l": list, "t": tuple, "s": set, "f": frozenset}[k](decode(i) for i in x)
    if k == "d":
        return {decode(a): decode(b) for a, b in x}
    if k == "p":
        return pathlib.Path(x)
    if k == "h":
        return objects[x]
    raise ValueError("unknown value")


def serve(m):
    op = m["op"]
    if op == "import":
        __import__(m["name"])
        return handle(sys.modules[m["name"]])
    obj = objects[m["h"]]
    args = [decode(a) for a in m.get("args", [])]
    if op == "getattr":
        return encode(getattr(obj, m["name"]))
    if op == "setattr":
        setattr(obj, m["name"], decode(m["v"]))
        return None
    if op == "delattr":
        delattr(obj, m["name"])
        return None
    if op == "call":
        return encode(obj(*args, **{k: decode(v) for k, v in m["kwargs"]}))
    if op == "iter":
        return encode(iter(obj))
    if op == "next":
        return encode(next(obj))
    if op == "len":
        return len(obj)
    if op == "getitem":
        return encode(obj[args[0]])
    if op == "setitem":
        obj[args[0]] = args[1]
        return None
    if op == "delitem":
        del obj[args[0]]
        return None
    if op == "contains":
        return bool(args[0] in obj)
    if op == "str":
        return str(obj)
    if op == "enter":
        return encode(obj.__enter__())
    if op == "exit":
        obj.__exit__(None, None, None)
        return None
    raise ValueError("unknown operation " + op)


while True:
    (n,) = struct.unpack(">I", recv_exact(4))
    if n > MAX:
        raise SystemExit(1)
    try:
        reply = {"v": serve(json.loads(recv_exact(n)))}
    except BaseException as e:
        if isinstance(e, SystemExit) and not isinstance(e.code, (int, type(None))):
            e = RuntimeError(str(e.code))
        name = type(e).__name__ if getattr(builtins, type(e).__name__, None) is type(e) else "AgentError"
        msg = str(e)
        reply = {"err": [name, msg[:2000]]}
        x = agent_exception(type(e))
        if x is not None:
            reply["cls"] = x
    data = json.dumps(reply).encode()
    sock.sendall(struct.pack(">I", len(data)) + data)
