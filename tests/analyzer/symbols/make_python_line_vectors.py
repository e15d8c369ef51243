"""Writes line-table test vectors for python_lines_test.cpp: real co_linetable bytes of code objects
compiled by the running interpreter, with the lines the interpreter itself gives (co_lines()).

Regenerate (one block per interpreter version, appended into one file):
    for py in python3.10 python3.11 python3.12 python3.13; do
        $py tests/analyzer/symbols/make_python_line_vectors.py; done > tests/analyzer/symbols/python_line_vectors.inc
"""
import sys

# One source for every version; each function exercises a corner of the encodings: big line
# jumps (3.10 splits them over several entries), long bytecode ranges on one line, columns past
# 127 (3.11+ long-form entries), lines going backwards, code without a line (no-location entries).
SOURCE = '''
def simple(a, b):
    c = a + b
    return c

def loops(n):
    total = 0
    for i in range(n):
        if i % 2:
            total += i
        else:
            total -= 1
    while total > 100:
        total //= 2
    return total

def handlers():
    try:
        x = 1 / 0
    except ZeroDivisionError as e:
        x = str(e)
    finally:
        x = None
    with open(__file__) as f:
        pass
    return x

def backwards(f):
    return f(
        1,
        2,
    )(
        3
    )

def one_long_line():
    return [0, 1, 2, 3, 4, 5, 6, 7, 8, 9] + [i * 2 + 1 - 3 // 4 for i in range(10)] + [x for x in "abcdefghijklmnopqrstuvwxyz"] + [len(str(i)) + int(str(i)) * 3 for i in range(100) if i % 3 == 1 and i % 5 == 2 or i % 7 == 3]

def far_jump():
    a = 1
''' + "\n" * 400 + '''
    b = 2
''' + "\n" * 40000 + '''
    return a + b

def generator():
    yield 1
    yield from range(3)

async def coroutine(other):
    await other
    async with other as o:
        pass
    return o

class Klass:
    attr = 1
    def method(self):
        return lambda q: q + self.attr
''' + "    " + "value = " + " " * 140 + "(1 +\n" + " " * 150 + "2)\n"


def all_codes(code):
    yield code
    for const in code.co_consts:
        if hasattr(const, "co_code"):
            yield from all_codes(const)


def main():
    version = sys.version_info
    print(f"// CPython {version.major}.{version.minor}.{version.micro}")
    module = compile(SOURCE, "vectors.py", "exec")
    for code in all_codes(module):
        table = code.co_linetable.hex()
        ranges = ", ".join(f"{{{s}, {e}, {-1 if l is None else l}}}" for s, e, l in code.co_lines())
        print(f"{{0x{version.major:02x}{version.minor:02x}, \"{code.co_name}\", "
              f"{code.co_firstlineno}, {len(code.co_code)},")
        print(f' "{table}",')
        print(f"  {{{ranges}}}}},")


main()
