#!/usr/bin/env python3
"""Plans every GPT, MoE and hybrid model config of Megatron-LM's functional tests
(tests/functional_tests/test_cases/*/model_config.yaml) as its MODEL_ARGS would launch pretrain_gpt.py, on one
DGX-H100 node, and counts what plans and what is refused, by message (issue 29's corpus of real inputs).

usage: tools/megatron_ci_configs.py MEGATRON_LM_GIT_DIR [TRAINPLAN] [--keep-deterministic]
Reads HEAD with `git show`. BERT, T5, RETRO, multimodal, inference and VLM cases are left out (not
pretrain_gpt.py). --deterministic-mode is dropped unless --keep-deterministic: 153 of the 243 configs at
d98e8a6 carry it, and trainplan refuses it by name (its deterministic attention backward is not priced).
A YAML list value (or a "[a, b]" string) becomes the flag's arguments, as nargs='*' flags take them."""
import collections, re, subprocess, sys

def main():
    repo = sys.argv[1]
    binary = next((a for a in sys.argv[2:] if not a.startswith('--')), 'build/bin/trainplan')
    keep_deterministic = '--keep-deterministic' in sys.argv
    import yaml
    names = subprocess.run(['git', '--git-dir', repo, 'ls-tree', '-r', '--name-only', 'HEAD',
                            'tests/functional_tests/test_cases'], capture_output=True, text=True, check=True).stdout.split()
    skip = re.compile('bert|t5|retro|multimodal|mimo|inference|vlm|llava')
    names = [n for n in names if n.endswith('model_config.yaml') and not skip.search(n)]
    reasons, planned = collections.Counter(), 0
    for name in names:
        text = subprocess.run(['git', '--git-dir', repo, 'show', 'HEAD:' + name], capture_output=True, text=True).stdout
        model_args = (yaml.safe_load(text) or {}).get('MODEL_ARGS') or {}
        args = []
        for flag, value in model_args.items():
            if flag == '--deterministic-mode' and not keep_deterministic:
                continue
            if value is True or value == 'true':
                args.append(flag)
            elif value is False or value == 'false':
                continue
            elif isinstance(value, (list, tuple)):
                args += [flag] + [str(x) for x in value]
            else:
                s = str(value)
                if s.startswith('[') and s.endswith(']'):
                    s = s[1:-1].replace(',', ' ')
                args += [flag] + (s.split() if ' ' in s else [s])
        run = subprocess.run([binary, 'memory', '--cluster', 'dgx-h100', '--num-gpus', '8', '--', 'python',
                              'pretrain_gpt.py'] + args, capture_output=True, text=True)
        if run.returncode == 0:
            planned += 1
        else:
            line = next((l for l in run.stderr.splitlines() if 'error' in l), run.stderr[:200])
            reasons[line.replace('trainplan: error: ', '')[:110]] += 1
    print(f'{planned} of {len(names)} plan')
    for message, count in reasons.most_common():
        print(f'{count:4d}  {message}')

if __name__ == '__main__':
    main()
