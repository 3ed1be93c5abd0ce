// The registered workloads, one line each, in the order `kernbench run --help` lists
// them. KB_WORKLOAD(fn) names the function of the workload's folder that returns it.
KB_WORKLOAD(gqa_decode_workload)
KB_WORKLOAD(gqa_decode_batch_workload)
KB_WORKLOAD(gqa_prefill_workload)
KB_WORKLOAD(hbm_stream_workload)
KB_WORKLOAD(tiled_gemm_workload)
KB_WORKLOAD(row_softmax_workload)
KB_WORKLOAD(collective_workload)
KB_WORKLOAD(decoder_layer_workload)
KB_WORKLOAD(model_step_workload)
