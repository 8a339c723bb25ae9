#!/usr/bin/env python3
"""Classifies the Megatron-Core flags trainplan does not model (the unknown ones of tests/data/megatron-core-flags.txt,
one per line in /tmp/unclassified.txt) as ignored (change no estimate) or refused (would change one), by name prefix with
the exceptions listed; writes src/cli/megatron_core_{ignored,refused}.inc. Review its output: the lists are the record."""
import re
flags=[l.strip() for l in open('/tmp/unclassified.txt') if l.strip()]
def base(f):
    for p in ('--no-','--disable-'):
        if f.startswith(p): return '--'+f[len(p):]
    return f
ignored_prefix = ['inference','rl','grpo','inprocess','ckpt','dist-ckpt','fim','dino','tokenizer','tiktoken','dataloader',
 'profile','otel','straggler','flight-recorder','nvtx','tensorboard','record','dump','eval','validation','test','vision','img',
 'patch','swin','bert','ict','biencoder','retriever','titles','evidence','sft','chat','langrl','mock','rerun','check','error','app',
 'adlr','ft','lr','wsd','warmup','wd','mup','override','async','non-persistent','yaml','save','load','logging','log','replication',
 'pytorch-profiler','suggested','trust','phase','iterations','iter','sample','skip','train','step','start','end','run','result','refit',
 'verify','one-logger','null','create-attention-mask','decode','short-seq','fake','local','lazy','persistent','perform','object-storage',
 'config','classes','query','mid-level','multiple','pretrained','head-lr','logits','indexer-log','memory-snapshot','gpu-sniff','use-checkpoint',
 'use-mp-args','use-tokenizer','use-persistent','use-pytorch-profiler','use-same-sampling','use-one-sent','use-gigatoken','use-legacy-static',
 'data-args','data-per-class','per-dataset','per-split','block-data','embedding-path','output-bert','num-classes','num-channels','mask',
 'vocab-extra','enable-ft','enable-msc','msc','save-tokenizer','strict-fsdp-dtensor','nccl-all-reduce-for-prefill','enable-chunked-prefill',
 'flash-decode','mlp-chunks-for-prefill','num-speculative','use-legacy','distributed-timeout','manual-gc','barrier-with','deterministic',
'data-parallel-random-init','init-method','embedding-init','init-model-with-meta','initialization','weight-decay',
 'decoupled','lion','muon','exp','apply-wd','data-sharding','rope','rotary','yarn','mscale','use-rope-scaling','mrope','relative-attention',
 'glu-linear-offset','activation-func-clamp','quick-geglu','qk-clip','qk-l2-norm','no-weight-decay','weight-decay-incr','tp-comm-bootstrap',
 'nccl-communicator','pipeline-model-parallel-comm-backend','gloo','moe-routing-trace','moe-per-layer-logging','moe-router-bias-update-rate',
 'moe-router-force','moe-input-jitter','moe-upcycling','moe-use-upcycling','moe-enable-routing-replay','moe-router-quantile','moe-router-enable-expert-bias',
 'moe-router-score-function','moe-router-topk-scaling','decrease-batch-size','max-tokens-to-oom','max-seqlen-per-dp-cp','te-rng-tracker','microbatch-group-size',
 'full-validation','use-cpu-initialization','enable-experimental','symmetric','sharp','use-sharp','high-priority','te-precision-config','use-transformer-engine-op-fuser',
 'clone-scatter-output','pad-vocab-size','fp16-lm-cross-entropy','cross-entropy-fusion-impl','use-te-activation-func','use-fused-weighted-squared-relu',
 'gradient-reduce-div-fusion','indexer-batch-size','softmax-type','use-ring-exchange-p2p','use-tp-pp-dp-mapping','pin-cpu','fused-residual-rmsnorm',
 'mla-down-proj-fusion','moe-permute-fusion','moe-router-fusion','moe-router-dtype','moe-router-padding','align-grad-reduce','align-param-gather',
 'ddp-average-in-collective','ddp-pad-buckets','ddp-param-name-patterns','ddp-bucket-size','ddp-num-buckets','use-layer-wise-param-layout','bf16-reduced-precision',
 'check-for-nan','kitchen','use-kitchen','cuda-graph-warmup','enable-cuda-graph','cuda-graph','optimizer-cuda-graph','external-cuda-graph']
refused_prefix = ['moe','dsa','mamba','hybrid','mtp','mhc','gtp','gdp','fp8','fp4','linear','kv-lora','q-lora','qk-head','qk-pos','v-head','qk-layernorm',
 'mla','cache-mla','window','attention-output-gate','experimental-attention','heterogeneous','expert-tensor-parallel','tensor-parallel-num-weight-shards',
 'megatron-fsdp','fsdp','use-megatron-fsdp','use-torch-fsdp2','torch-fsdp2','data-parallel-sharding','enable-full-sharding','num-distributed-optimizer',
 'use-precision-aware','main-grads','main-params','exp-avg','grad-reduce-in-bf16','ddp-reduce-scatter-with-fp32','optimizer-offload','optimizer-cpu-offload','use-torch-optimizer-for-cpu',
 'overlap','tp-comm','use-nccl-ub','offload','activation-offload','min-offloaded','fine-grained-activation','cpu-offloading','hierarchical-context','hybrid-context',
 'decoder-seq-length','encoder-seq-length','first-last-layers-bf16','num-layers-at','pipeline-model-parallel-layout','num-virtual-stages',
 'fp32-residual','use-grouped-gemm','delay-wgrad','defer','wgrad-deferral','ep-overlap','flash-attention-version','use-mup','freeze','spec','is-hybrid','mrope-section-x']
def classify(f):
    b=base(f)[2:]
    for p in sorted(refused_prefix,key=len,reverse=True):
        if b==p or b.startswith(p+'-'): 
            # exceptions: ignorable moe/fp8 flags listed in ignored with longer prefix
            for q in ignored_prefix:
                if (b==q or b.startswith(q+'-')) and len(q)>len(p): return 'ignored'
            return 'refused'
    for p in ignored_prefix:
        if b==p or b.startswith(p+'-'): return 'ignored'
    return None
res={'ignored':[], 'refused':[], None:[]}
for f in flags: res[classify(f)].append(f)
print(len(res['ignored']),len(res['refused']),len(res[None]))
print(' '.join(res[None]))
open('/tmp/ign.txt','w').write('\n'.join(res['ignored']))
open('/tmp/ref.txt','w').write('\n'.join(res['refused']))

moves_to_refused = {'cuda-graph','enable-cuda-graph','optimizer-cuda-graph','external-cuda-graph','cuda-graph-warmup','kitchen','use-kitchen',
  'sharp','use-sharp','fp16-lm-cross-entropy','quick-geglu','max-seqlen-per-dp-cp','microbatch-group-size','te-precision-config','pad-vocab-size'}
extra_ignored = {'--fp8-interval','--fp8-margin','--cache-mla-latents','--mamba-inference-conv-states-dtype',
  '--mamba-inference-ssm-states-dtype','--moe-pad-experts-for-cuda-graph-inference','--allow-ambiguous-pad-tokens','--calc-ft-timeouts','--distrib-optim-fully-reshardable-mem-efficient','--empty-unused-memory-level',
  '--batch-invariant-backend'}
extra_refused = {'--batch-invariant-mode','--disable-jit-fuser','--batch-size','--create-all-gather-group','--delay-offload-until-cuda-graph','--delta-offload-bytes-across-pp-ranks',
  '--enable-mhc-connections','--fine-grained-offloading-max-inflight-offloads','--keep-fp8-transpose-cache','--mlp-chunks-for-training',
  '--model-parallel-size','--outer-dp-sharding-strategy','--output-logit-dtype','--reuse-grad-buf-for-mxfp8-param-ag',
  '--suggested-communication-unit-size'}
final_ign, final_ref = [], []
for f in flags:
    c = classify(f)
    b = base(f)[2:]
    if c == 'ignored' and any(b == p or b.startswith(p + '-') for p in moves_to_refused): c = 'refused'
    if f in extra_ignored: c = 'ignored'
    if f in extra_refused: c = 'refused'
    assert c, f
    (final_ign if c == 'ignored' else final_ref).append(f)
print(len(final_ign), len(final_ref))
def emit(path, names, what):
    with open(path, 'w') as o:
        o.write(f"// Megatron-Core flags that {what} (tests/data/megatron-core-flags.txt, Megatron-LM d98e8a6 of\n")
        o.write("// 2026-08-22). Included by src/cli/args.cc into its table; one name per line, sorted.\n")
        for n in sorted(names): o.write(f'"{n}",\n')
emit('/work/main/src/cli/megatron_core_ignored.inc', final_ign, 'change no estimate (data, checkpoints, logging, inference, RL,\n// tokenizer, optimizer hyper-parameters, initialization, small kernel fusions)')
emit('/work/main/src/cli/megatron_core_refused.inc', final_ref, 'would change an estimate but are not modelled (FP8/FP4, MoE\n// routing and dispatch, MLA, DSA, Mamba and hybrid layers, MTP, overlap, offloading, FSDP variants, CUDA graphs)')
