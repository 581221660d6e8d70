"""Import InferenceX's single-node, non-speculative DeepSeek-R1 closed-loop sweeps as a scored validation file.

Reads a snapshot of the InferenceX benchmarks API (default ``/tmp/h5/ix_bench.json`` =
``packages/app/cypress/fixtures/api/benchmarks.json`` of github.com/vngcloud/InferenceX-app at
commit 7fe6d62ad57a3df061be692e86578c7111d880c7) and writes ``benchmarks/data/measured_inferencex.csv``
in the header of ``measured_public.csv``. Rows are scored, never fitted.

The server launch flags and the client command of each entry are read from the InferenceX benchmark
script revision in force at the entry's date (last ``main`` commit of that day, local mirror
``/work/.mirror/SemiAnalysisAI+InferenceX/repo``): the script is executed by bash in a throw-away
sandbox with every external program (python3, mpirun, docker, srun, hf, git, ...) replaced by a stub
that only records its arguments, so the script's own branches on ISL/OSL/CONC/TP/EP pick the flags.
Old (2025) docker-style scripts start only the server; their client is then read the same way from
the runner launch script of that revision.

Usage: python benchmarks/inferencex_import.py [ix_bench.json] [--mirror DIR] [--out CSV]

It runs third-party shell scripts under bash (external programs stubbed, files redirected into a temporary
directory, but the shell's own builtins and core utilities are real): run it only where that is acceptable,
by hand, to refresh the CSV; nothing in the test suite or the reports runs it (they read the CSV it wrote).
The snapshot and the mirror are inputs it does not fetch: the JSON from the fixture URL below, the mirror from
github.com/SemiAnalysisAI/InferenceX (the revision used: the commits named in each row's notes).
"""
from __future__ import annotations

import argparse
import csv
import glob
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
MIRROR = '/work/.mirror/SemiAnalysisAI+InferenceX/repo'
FIXTURE = ('https://github.com/vngcloud/InferenceX-app/blob/7fe6d62ad57a3df061be692e86578c7111d880c7/'
           'packages/app/cypress/fixtures/api/benchmarks.json')
IX = 'https://github.com/SemiAnalysisAI/InferenceX/blob'
SOURCE = 'InferenceX_API_snapshot_2026-06'
#: SGLang's --stream-interval (TensorRT-LLM's stream_interval) and --scheduler-recv-interval (validation/dataset.py
#: reads them), after the public header
EXTRA_COLUMNS = ['stream_interval', 'scheduler_recv_interval', 'bench_command']
RANGE_RATIO = 0.8  # RANDOM_RANGE_RATIO of benchmark-tmpl.yml / dsr1-tmpl.yml at every date of the snapshot
GPU = {'h200': 'h200_sxm', 'b200': 'b200_hgx', 'b300': 'b300_hgx', 'mi300x': 'mi300x', 'mi325x': 'mi325x',
       'mi355x': 'mi355x'}
FRAMEWORK = {'sglang': 'SGLang', 'trt': 'TensorRT-LLM', 'atom': 'ATOM'}
SUFFIX = {'sglang': '', 'trt': '_trt', 'atom': '_atom'}
METRICS = [('ttft_ms', 'mean_ttft', 1000.0), ('tpot_ms', 'mean_tpot', 1000.0), ('itl_ms', 'mean_itl', 1000.0),
           ('e2e_ms', 'mean_e2el', 1000.0), ('output_tok_s_per_gpu', 'output_tput_per_gpu', 1.0)]
STUBS = ['python3', 'python', 'mpirun', 'trtllm-serve', 'hf', 'huggingface-cli', 'pip', 'pip3', 'git',
         'nvidia-smi', 'rocm-smi', 'amd-smi', 'curl', 'sleep', 'docker', 'srun', 'salloc', 'sbatch', 'enroot',
         'wget', 'sudo', 'apt', 'apt-get', 'uv', 'vllm', 'atom', 'numactl', 'rocminfo', 'squeue', 'scancel',
         'timeout', 'lsof', 'ss', 'tail']
OVERRIDES = '\n'.join(f'{f}() {{ :; }}' for f in (
    'check_env_vars', 'start_gpu_monitor', 'stop_gpu_monitor', 'wait_for_server_ready', 'run_eval',
    'append_lm_eval_summary', 'setup_eval_context')) + '\n'


def git(*args: str) -> str:
    r = subprocess.run(['git', '-C', MIRROR, *args], capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else ''


def show(commit: str, path: str) -> str | None:
    r = subprocess.run(['git', '-C', MIRROR, 'show', f'{commit}:{path}'], capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else None


def file_commit(commit: str, path: str) -> str:
    """The last commit at or before ``commit`` that touched ``path``."""
    return git('log', '-1', '--format=%H', commit, '--', path).strip()


def run_stubbed(commit: str, path: str, env_extra: dict, launcher: str | None = None) -> dict:
    """Execute ``path`` at ``commit`` under bash with all external programs stubbed; return the calls."""
    text = show(commit, path)
    sandbox = tempfile.mkdtemp(prefix='ix-import-')
    try:
        bindir = os.path.join(sandbox, 'bin')
        os.makedirs(bindir)
        log = os.path.join(sandbox, 'calls.log')
        # one write per call, so concurrent (backgrounded) stubs do not interleave their lines
        stub = ('#!/bin/bash\nline="$(basename "$0")"; for a in "$@"; do line+=$\'\\x1f\'"$a"; done\n'
                f'printf "%s\\n" "$line" >> {log}\n')
        # a container/cluster launcher handed a benchmark script runs it here, with the launcher's env
        runner = ('for a in "$@"; do for t in $a; do case "$t" in benchmarks/*.sh) '
                  f'[ -f "{sandbox}/$t" ] && exec bash "{sandbox}/$t";; esac; done; done\n')
        for name in STUBS:
            p = os.path.join(bindir, name)
            with open(p, 'w') as f:
                f.write(stub + (runner if name in ('docker', 'srun', 'salloc', 'enroot') else '') + 'exit 0\n')
            os.chmod(p, 0o755)
        ws = os.path.join(sandbox, 'workspace')
        os.makedirs(ws)
        tmp = os.path.join(sandbox, 'tmp')
        os.makedirs(tmp)

        def local(t: str) -> str:  # keep the script's files inside the sandbox
            return t.replace('/tmp/', tmp + '/').replace('/workspace', ws)
        sp = os.path.join(sandbox, path)
        os.makedirs(os.path.dirname(sp), exist_ok=True)
        with open(sp, 'w') as f:
            # trailing ``wait``: let backgrounded (stubbed) server launches log before the sandbox goes
            f.write(local(text) + '\nwait\n')
        bash_env = os.path.join(sandbox, 'bash_env.sh')
        with open(bash_env, 'w') as f:
            # no process is ever signalled; ``kill -0`` says "gone" so wait/monitor loops end at once
            f.write('kill() { [[ "$1" == "-0" ]] && return 1; return 0; }\n')
        entry = sp
        if launcher:
            entry = os.path.join(sandbox, launcher)
            os.makedirs(os.path.dirname(entry), exist_ok=True)
            with open(entry, 'w') as f:
                f.write(local(show(commit, launcher)) + '\nwait\n')
        lib = show(commit, 'benchmarks/benchmark_lib.sh')
        if lib is not None:
            with open(os.path.join(sandbox, 'benchmarks', 'benchmark_lib.sh'), 'w') as f:
                f.write(local(lib) + OVERRIDES)
        env = {'PATH': bindir + ':/usr/bin:/bin', 'HOME': sandbox, 'BASH_ENV': bash_env, 'PORT': '8888', 'PORT_OFFSET': '0', 'TMPDIR': sandbox + '/tmp',
               'RANDOM_RANGE_RATIO': str(RANGE_RATIO), 'RESULT_FILENAME': 'res', 'HF_HUB_CACHE': sandbox + '/hf',
               'GITHUB_WORKSPACE': sandbox, 'PP_SIZE': '1', 'SPEC_DECODING': 'none', 'DISAGG': 'false',
               'RUN_EVAL': 'false', 'EVAL_ONLY': 'false', 'PROFILE': '',
               'EXP_NAME': f"dsr1_{env_extra.get('ISL')}_{env_extra.get('OSL')}", 'RUNNER_NAME': 'runner_0'}
        env.update({k: str(v) for k, v in env_extra.items()})
        try:
            r = subprocess.run(['bash', entry], cwd=sandbox, env=env, capture_output=True, text=True, timeout=60)
            rc, err = r.returncode, r.stderr
        except subprocess.TimeoutExpired as exc:  # a launcher polling loop: keep what was logged
            rc, err = 'timeout', str(exc.stderr or '')
        calls = []
        if os.path.exists(log):
            calls = [line.split('\x1f') for line in open(log).read().split('\n') if line]
        files = {}
        for f in sorted(glob.glob(sandbox + '/*') + glob.glob(ws + '/*')):
            if os.path.isfile(f) and f.endswith(('.yml', '.yaml')):
                files[os.path.basename(f)] = open(f).read()
        if os.environ.get('IX_IMPORT_DEBUG'):
            print(err[-4000:], file=sys.stderr)
        return {'calls': calls, 'files': files, 'rc': rc}
    finally:
        shutil.rmtree(sandbox, ignore_errors=True)


def find_server(calls: list[list[str]]) -> list[str] | None:
    for c in calls:
        for i, a in enumerate(c):
            if a in ('sglang.launch_server', 'atom.entrypoints.openai_server') or a.endswith('trtllm-serve') \
                    or a == 'trtllm-serve':
                return c[i:]
            if 'sglang.launch_server' in a or 'trtllm-serve ' in a:  # a wrapped "bash -c ..." string
                toks = shlex.split(a)
                for j, t in enumerate(toks):
                    if t in ('sglang.launch_server', 'trtllm-serve'):
                        return toks[j:]
    return None


def find_client(calls: list[list[str]]) -> list[str] | None:
    for c in calls:
        for i, a in enumerate(c):
            if a.endswith('benchmark_serving.py'):
                return ['benchmark_serving.py'] + c[i + 1:]
            if 'benchmark_serving.py' in a:
                toks = shlex.split(a.split('&&')[-1])
                for j, t in enumerate(toks):
                    if t.endswith('benchmark_serving.py'):
                        return ['benchmark_serving.py'] + toks[j + 1:]
    return None


def opt(args: list[str], *names: str):
    """Value of the first of ``names`` in an argv (``--x v`` or ``--x=v``); True for a bare flag."""
    for i, a in enumerate(args):
        for n in names:
            if a == n:
                nxt = args[i + 1] if i + 1 < len(args) else None
                return nxt if nxt is not None and not nxt.startswith('-') else True
            if a.startswith(n + '='):
                return a.split('=', 1)[1]
    return None


def clean_client(args: list[str]) -> list[str]:
    """The client argv without its output-file arguments (sandbox paths)."""
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        name = a.split('=', 1)[0]
        if name in ('--result-dir', '--result-filename', '--save-result'):
            skip = '=' not in a and name != '--save-result'
            continue
        out.append(a)
    return out


def ep_check(fw: str, server: list[str], e: dict) -> str:
    """A note where the launch flags and the API's decode_ep disagree (ep is kept from the API)."""
    ep = e['decode_ep']
    if fw == 'sglang':
        v = opt(server, '--ep-size', '--expert-parallel-size', '--ep')
        if opt(server, '--enable-ep-moe') and ep == 1:
            return ('the script passes --enable-ep-moe (expert parallel over the TP group in that SGLang) while '
                    'the API says decode_ep 1; ep kept from the API')
        if isinstance(v, str) and v.isdigit() and int(v) != ep:
            return f'the script passes --ep-size {v} while the API says decode_ep {ep}; ep kept from the API'
    elif fw == 'trt':
        v = opt(server, '--ep_size')
        if isinstance(v, str) and v.isdigit() and int(v) != ep:
            return f'the script passes --ep_size {v} while the API says decode_ep {ep}; ep kept from the API'
    elif fw == 'atom':
        if opt(server, '--enable-expert-parallel') and ep == 1:
            return 'the script passes --enable-expert-parallel while the API says decode_ep 1; ep kept from the API'
    return ''


def tip(date: str) -> str:
    return git('log', 'main', '--before', f'{date} 23:59:59', '-1', '--format=%H').strip()


def script_for(commit: str, e: dict) -> tuple[str, list[str]]:
    """(script path, alternatives not used) for an entry at ``commit``."""
    base = f"dsr1_{e['precision']}_{e['hardware']}{SUFFIX[e['framework']]}"
    for d in ('benchmarks/single_node/fixed_seq_len/', 'benchmarks/single_node/', 'benchmarks/'):
        if show(commit, d + base + '.sh') is not None:
            return d + base + '.sh', []
    found = [p for p in (f'benchmarks/{base}_docker.sh', f'benchmarks/{base}_slurm.sh') if show(commit, p) is not None]
    if not found:
        raise FileNotFoundError(f'no script {base} at {commit}')
    return found[0], found[1:]


def needs_launcher(text: str) -> bool:
    """2025-style scripts: the client (or its NUM_PROMPTS) lives in the runner's launch script."""
    if 'benchmark_serving' not in text:
        return True
    return '$NUM_PROMPTS' in text.replace('{', '').replace('}', '') and 'NUM_PROMPTS=' not in text


def launcher_for(commit: str, e: dict, script: str) -> str | None:
    """The runner launch script that starts ``script`` (first in name order when several can)."""
    kind = '_docker.sh' if script.endswith('_docker.sh') else '_slurm.sh' if script.endswith('_slurm.sh') else '.sh'
    names = git('ls-tree', '--name-only', commit, 'runners/').split()
    for n in sorted(names):
        if os.path.basename(n).startswith(f"launch_{e['hardware']}-"):
            t = show(commit, n) or ''
            if kind in t and 'benchmarks/' in t:
                return n
    return None


def config_entry(commit: str, e: dict) -> tuple[dict | None, str | None]:
    """(config dict with image/model, path) for the entry's recipe at ``commit``."""
    paths = [p for p in git('ls-tree', '-r', '--name-only', commit).split()
             if (p.startswith('configs/') or p.startswith('.github/configs/')) and 'master' in p
             and p.endswith('.yaml')]
    key = f"dsr1-{e['precision']}-{e['hardware']}-{e['framework']}"
    for p in paths:
        try:
            doc = yaml.safe_load(show(commit, p) or '') or {}
        except yaml.YAMLError:
            continue
        if isinstance(doc, dict) and isinstance(doc.get(key), dict):
            return doc[key], p
    wf = '.github/workflows/dsr1-tmpl.yml'
    doc = yaml.safe_load(show(commit, wf) or '') or {}
    for job in (doc.get('jobs') or {}).values():
        w = job.get('with') or {}
        if w.get('framework') == e['framework'] and w.get('precision') == e['precision'] and \
                str(w.get('runner', '')).split('-')[0] == e['hardware']:
            return {'image': w.get('image'), 'model': w.get('model')}, wf
    return None, None


def engine_version(image: str | None) -> tuple[str, str]:
    """(engine_version, note) from an image tag."""
    if not image:
        return '', ''
    tag = image.replace('#', '/').rsplit(':', 1)[-1]
    if 'sgl-dev' in image:  # AMD's dated SGLang development builds (rocm/7.0:..._sgl-dev-v0.5.2-..-20250915)
        return '', f'image {image} is a dated SGLang development build, no release: engine_version blank'
    if 'sglang' in image:
        v = tag.lstrip('v').split('-')[0]
        return v, ''
    if 'tensorrt-llm' in image:
        return tag, ''
    if 'atom' in image:
        part = tag.rsplit('atom', 1)[-1].split('-')[0]
        if part.replace('.', '').isdigit() and '.' in part:
            return part, ''
        return '', f'ATOM image {image} is a dated build (atom{part}), no release number: engine_version blank'
    return '', f'engine of image {image} not recognized'


def model_id(e: dict) -> str:
    if e['precision'] == 'fp8':
        return 'deepseek-ai/DeepSeek-R1-0528'
    if e['hardware'].startswith('mi'):
        return 'amd/DeepSeek-R1-0528-MXFP4'
    return 'nvidia/DeepSeek-R1-0528-FP4'


def draw_mean(length: int, ratio: float) -> float:
    """Mean of benchmark_serving.py sample_random_requests' lengths: np.random.randint(int(L*r), L+1)."""
    return (int(length * ratio) + length) / 2.0


def trt_options(files: dict) -> dict:
    out = {}
    for name, text in files.items():
        try:
            d = yaml.safe_load(text)
        except yaml.YAMLError:
            continue
        if isinstance(d, dict):
            out[name] = d
    return out


def flatten(d: dict, prefix: str = '') -> list[str]:
    items = []
    for k, v in d.items():
        if isinstance(v, dict):
            items += flatten(v, f'{prefix}{k}.')
        elif isinstance(v, list) and len(v) > 12:
            items.append(f'{prefix}{k}=[{v[0]}..{v[-1]}, {len(v)} values]')
        else:
            items.append(f'{prefix}{k}={v}')
    return items


def build(entries: list[dict]) -> tuple[list[dict], list[str]]:
    header = open(HERE / 'data' / 'measured_public.csv').readline().strip().split(',') + EXTRA_COLUMNS
    rows, log = [], []
    cache: dict = {}
    n = 0
    for e in entries:
        commit = tip(e['date'])
        script, alts = script_for(commit, e)
        cfg, cfg_path = config_entry(commit, e)
        cfg_model = (cfg or {}).get('model')
        model_env = cfg_model or model_id(e)
        env = {'MODEL': model_env, 'TP': e['decode_tp'], 'EP_SIZE': e['decode_ep'],
               'DP_ATTENTION': str(bool(e['decode_dp_attention'])).lower(), 'CONC': e['conc'], 'ISL': e['isl'],
               'OSL': e['osl'], 'MAX_MODEL_LEN': e['isl'] + e['osl'] + 256, 'PRECISION': e['precision'],
               'FRAMEWORK': e['framework'], 'IMAGE': e['image'] or (cfg or {}).get('image') or ''}
        key = (commit, script, tuple(sorted(env.items())))
        if key not in cache:
            launcher = launcher_for(commit, e, script) if needs_launcher(show(commit, script)) else None
            res = run_stubbed(commit, script, env, launcher)
            server, client = find_server(res['calls']), find_client(res['calls'])
            alt_same = None
            for a in alts:
                s2 = find_server(run_stubbed(commit, a, env)['calls'])
                alt_same = (a, s2 is not None and server is not None and s2[1:] == server[1:])
            cache[key] = (server, client, trt_options(res['files']), launcher, alt_same)
        server, client, opts, launcher, alt_same = cache[key]
        if server is None:
            raise RuntimeError(f'no server command captured for {script}@{commit} {env}')
        script_rev = file_commit(commit, script)
        fw = e['framework']
        notes_cfg = ''
        image = e['image']
        img_note = ''
        if image is None:
            image = (cfg or {}).get('image')
            if image:
                img_note = (f"image null in the API; {image} is what {cfg_path}@{commit[:10]} names for this recipe "
                            f"at that date")
            else:
                img_note = 'image null in the API and not found in the configs at that date: engine_version blank'
        ver, ver_note = engine_version(image)
        # schema columns from the server flags
        max_seqs = max_tok = gmu = prefix = kv = stream = recv = ''
        cuda_graphs = ''
        extra = []
        if fw == 'sglang':
            max_seqs = opt(server, '--max-running-requests') or ''
            max_tok = opt(server, '--chunked-prefill-size') or ''
            gmu = opt(server, '--mem-fraction-static') or ''
            if opt(server, '--disable-radix-cache'):
                prefix = 'off'
            k = opt(server, '--kv-cache-dtype')
            if isinstance(k, str) and k.startswith('fp8'):
                kv = 'fp8'
            if opt(server, '--disable-cuda-graph'):
                cuda_graphs = 'off'
            stream = opt(server, '--stream-interval') or ''
            recv = opt(server, '--scheduler-recv-interval') or ''
        elif fw == 'trt':
            max_seqs = opt(server, '--max_batch_size') or ''
            max_tok = opt(server, '--max_num_tokens') or ''
            for d in opts.values():
                kvc = d.get('kv_cache_config') or {}
                if kvc.get('enable_block_reuse') is False:
                    prefix = 'off'
                if str(kvc.get('dtype', '')).startswith('fp8'):
                    kv = 'fp8'
                if d.get('max_batch_size') and not max_seqs:
                    max_seqs = d['max_batch_size']
                if d.get('max_num_tokens') and not max_tok:
                    max_tok = d['max_num_tokens']
                if d.get('stream_interval') is not None:  # llm_args stream_interval (engines.yaml trtllm@1.2)
                    stream = d['stream_interval']
                if kvc.get('free_gpu_memory_fraction') is not None:
                    extra.append(f"kv_cache_config.free_gpu_memory_fraction={kvc['free_gpu_memory_fraction']} "
                                 f"(fraction of the memory left after weights, not a total-memory fraction: "
                                 f"gpu_memory_utilization left blank)")
        elif fw == 'atom':
            max_seqs = opt(server, '--max-num-seqs', '--max_num_seqs') or ''
            max_tok = opt(server, '--max-num-batched-tokens', '--max_num_batched_tokens') or ''
            gmu = opt(server, '--gpu-memory-utilization', '--gpu_memory_utilization') or ''
            k = opt(server, '--kv_cache_dtype', '--kv-cache-dtype')
            if isinstance(k, str) and k.startswith('fp8'):
                kv = 'fp8'
            if opt(server, '--enforce-eager', '--enforce_eager'):
                cuda_graphs = 'off'
        num_prompts = opt(client or [], '--num-prompts')
        nreq = int(num_prompts) if isinstance(num_prompts, str) and num_prompts.isdigit() else e['conc'] * 10
        rr = opt(client or [], '--random-range-ratio')
        if not (isinstance(rr, str) and rr.replace(".", "").isdigit()):
            raise RuntimeError(f"bad client command {client} for {script}@{commit} {env}")
        ratio = float(rr)
        mid = model_id(e)
        note = ['InferenceX (SemiAnalysis) benchmarks API snapshot entry (single node, no speculative decoding, '
                f"not disaggregated), run date {e['date']}; DeepSeek-R1-0528 {e['precision'].upper()} "
                f"on {e['num_decode_gpu']}x{e['hardware'].upper()}, {FRAMEWORK[fw]} image {image or 'unknown'}, "
                f"decode TP={e['decode_tp']} EP={e['decode_ep']} dp_attention={e['decode_dp_attention']}"]
        if cfg_model and cfg_model != mid:
            note.append(f'checkpoint named by the config: {cfg_model} (row model id {mid}, the inferbound id)')
        if img_note:
            note.append(img_note)
        if ver_note:
            note.append(ver_note)
        cl = ' '.join(shlex.quote(x) for x in clean_client(client)) if client else 'not captured'
        note.append(f'client: {cl}' + (f' (from {launcher}@{file_commit(commit, launcher)[:10]})' if launcher else ''))
        if nreq != e['conc'] * 10:
            note.append(f'num_requests {nreq} = the --num-prompts of that revision (not CONC*10)')
        note.append(f"lengths = means of the client's uniform integer draw in [int(L*{ratio}), L] "
                    f"(nominal ISL/OSL {e['isl']}/{e['osl']})")
        srv = ' '.join(shlex.quote(x) for x in server)
        note.append(f'server: {srv}')
        epn = ep_check(fw, server, e)
        if epn:
            note.append(epn)
        adp = bool(e['decode_dp_attention'])
        ran_adp = None
        if fw == 'sglang':
            ran_adp = bool(opt(server, '--enable-dp-attention'))
        elif fw == 'trt':
            vals = [d.get('enable_attention_dp') for d in opts.values() if 'enable_attention_dp' in d]
            ran_adp = bool(vals[0]) if vals else None
        if ran_adp is not None and ran_adp != adp:
            note.append(f'the script runs attention DP {ran_adp} while the API says decode_dp_attention {adp}; '
                        'attention_dp kept from the API')
        for name, d in opts.items():
            note.append(f'{name}: ' + '; '.join(flatten(d)))
        note += extra
        if alt_same is not None:
            note.append(f"{alt_same[0]} also existed at that revision (which one the runner used is not in the "
                        f"API); its server flags are {'the same' if alt_same[1] else 'DIFFERENT'}")
        note.append(f'script {IX}/{script_rev}/{script}')
        note.append(f'fixture {FIXTURE}')
        for metric, field, scale in METRICS:
            v = e['metrics'].get(field)
            if v is None:
                if metric == 'output_tok_s_per_gpu':
                    log.append(f"{e['date']} {e['hardware']} {fw} conc {e['conc']}: no output_tput_per_gpu, "
                               f"metric skipped")
                continue
            n += 1
            r = {h: '' for h in header}
            r.update({'case': f'p-ixapi-{n:04d}', 'source': SOURCE, 'model': mid, 'gpu': GPU[e['hardware']],
                      'num_gpus': e['decode_tp'],  # single node: EP shards the experts over the TP ranks (the API's
                      # num_decode_gpu reads tp x ep: 64 for TP8 EP8 on one 8-GPU node) 'tp': e['decode_tp'], 'pp': 1, 'ep': e['decode_ep'],
                      'kv_dtype': kv, 'framework': FRAMEWORK[fw], 'scenario': 'serving', 'num_requests': nreq,
                      'input_len': draw_mean(e['isl'], ratio), 'output_len': draw_mean(e['osl'], ratio),
                      'metric': metric, 'value': f'{v * scale:.6g}', 'source_url': e['run_url'],
                      'concurrency': e['conc'], 'engine_version': ver, 'dataset': f'random (range ratio {ratio:g})',
                      'max_num_seqs': max_seqs, 'max_num_batched_tokens': max_tok,
                      'gpu_memory_utilization': gmu, 'prefix_caching': prefix,
                      'attention_dp': 'on' if e['decode_dp_attention'] else '', 'cuda_graphs': cuda_graphs,
                      'weight_dtype': 'fp4' if e['precision'] == 'fp4' else '',
                      'stream_interval': stream, 'scheduler_recv_interval': recv,
                      'bench_command': f'python benchmarks/{cl}' if client else '',  # replayed by validate
                      'notes': '; '.join(note)})
            rows.append(r)
    return rows, log


def main(argv=None) -> int:
    global MIRROR
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('json', nargs='?', default='/tmp/h5/ix_bench.json')
    ap.add_argument('--mirror', default=MIRROR)
    ap.add_argument('--out', default=str(HERE / 'data' / 'measured_inferencex.csv'))
    a = ap.parse_args(argv)
    MIRROR = a.mirror
    data = json.load(open(a.json))
    keep = [e for e in data if e.get('disagg') is False and e.get('is_multinode') is False
            and e.get('spec_method') == 'none']
    rows, log = build(keep)
    header = open(HERE / 'data' / 'measured_public.csv').readline().strip().split(',') + EXTRA_COLUMNS
    with open(a.out, 'w', newline='') as f:
        w = csv.DictWriter(f, fieldnames=header, lineterminator='\n')
        w.writeheader()
        w.writerows(rows)
    for line in log:
        print(line, file=sys.stderr)
    print(f'{len(keep)} entries -> {len(rows)} rows -> {a.out}', file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(main())
