#!/usr/bin/env python3
"""Lists every command-line flag of a Megatron-LM checkout's pretrain scripts: the literal add_argument
names of megatron/training/arguments.py and megatron/post_training/arguments.py (ModelOpt's, which
pretrain_gpt.py registers) and the flags ArgumentGroupFactory (megatron/training/
argument_utils.py) builds from the config dataclasses: `--field-name` for each field not excluded, and
`--no-field-name` / `--disable-field-name` for a bool that defaults to True; an "arg_names" entry in a
field's argparse_meta replaces them. Reads the sources as text (no Megatron import), so it runs anywhere.

Usage: megatron_core_flags.py GIT_DIR [REV] > tests/data/megatron-core-flags.txt
"""
import ast
import re
import subprocess
import sys

git_dir = sys.argv[1]
rev = sys.argv[2] if len(sys.argv) > 2 else "HEAD"


def show(path):
    return subprocess.check_output(["git", "--git-dir", git_dir, "show", f"{rev}:{path}"], text=True)


def find_class(name):
    out = subprocess.check_output(["git", "--git-dir", git_dir, "grep", "-l", f"^class {name}\\b", rev, "--", "*.py"],
                                  text=True)
    return out.split("\n")[0].split(":", 1)[1]


def dataclass_fields(name, seen=None):
    """(field, default is True, arg_names or None) for the dataclass `name` and its dataclass bases."""
    tree = ast.parse(show(find_class(name)))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == name:
            for base in node.bases:
                if isinstance(base, ast.Name) and base.id.endswith("Config"):
                    out += dataclass_fields(base.id)
            for stmt in node.body:
                if not isinstance(stmt, ast.AnnAssign) or not isinstance(stmt.target, ast.Name):
                    continue
                field = stmt.target.id
                default_true = False
                arg_names = None
                value = stmt.value
                if isinstance(value, ast.Constant) and value.value is True:
                    default_true = True
                if isinstance(value, ast.Call):  # field(default=..., metadata={...})
                    for kw in value.keywords:
                        if kw.arg == "default" and isinstance(kw.value, ast.Constant) and kw.value.value is True:
                            default_true = True
                        if kw.arg == "metadata":
                            text = ast.unparse(kw.value)
                            m = re.search(r"'arg_names':\s*\[([^\]]*)\]", text)
                            if m:
                                arg_names = re.findall(r"'(--[^']+)'", m.group(1))
                is_bool = ast.unparse(stmt.annotation) == "bool"
                out.append((field, is_bool and default_true, arg_names))
    return out


args_src = show("megatron/training/arguments.py")
flags = set(re.findall(r"""add_argument\(\s*['"](--[A-Za-z0-9_\-]+)['"]""", args_src))
flags |= set(re.findall(r"""['"](--[a-z0-9][a-z0-9\-_]+)['"]""", args_src))
# pretrain_gpt.py and pretrain_mamba.py register ModelOpt's flags too (add_modelopt_args, when ModelOpt
# is installed, as in NVIDIA's containers).
modelopt_src = show("megatron/post_training/arguments.py")
flags |= set(re.findall(r"""['"](--[a-z0-9][a-z0-9\-_]+)['"]""", modelopt_src))
for m in re.finditer(r"(\w+)\s*=\s*ArgumentGroupFactory\((\w+)(?:,\s*exclude\s*=\s*(\w+|\[[^\]]*\]))?", args_src):
    cls, excl = m.group(2), m.group(3)
    excluded = set()
    if excl:
        if excl.startswith("["):
            excluded = set(re.findall(r"['\"](\w+)['\"]", excl))
        else:  # a list variable assigned earlier in the same function
            lst = re.search(excl + r"\s*=\s*\[(.*?)\n\s*\]", args_src, re.S)
            excluded = set(re.findall(r"['\"](\w+)['\"]", lst.group(1))) if lst else set()
    for field, default_true, arg_names in dataclass_fields(cls):
        if field in excluded or field.startswith("_"):
            continue
        if arg_names:
            flags |= set(arg_names)
        elif default_true:
            flags |= {"--no-" + field.replace("_", "-"), "--disable-" + field.replace("_", "-")}
        else:
            flags.add("--" + field.replace("_", "-"))

commit = subprocess.check_output(["git", "--git-dir", git_dir, "rev-parse", rev], text=True).strip()
date = subprocess.check_output(["git", "--git-dir", git_dir, "show", "-s", "--format=%cs", rev], text=True).strip()
print(f"# Megatron-LM {commit} ({date}): every flag of megatron/training/arguments.py, with the config")
print("# dataclasses' generated ones and ModelOpt's (megatron/post_training/arguments.py, add_modelopt_args)")
print("# (tools/megatron_core_flags.py). tests/cli/args_test.cc classifies each.")
for f in sorted(flags):
    print(f)
