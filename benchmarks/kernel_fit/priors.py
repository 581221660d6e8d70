"""SM counts with sources, and prior curves for catalog GPUs that aiconfigurator-core did not measure.

A prior copies the curves of a measured *template* GPU (same vendor generation where one exists) and
changes only what physics says differs:

- compute plateau e_c (GEMM, MoE, attention) scales with the ratio of the two GPUs' best-shape matmul
  fractions (MAMF, data/efficiency.yaml ``compute`` / ``compute_by_dtype``; stas00/ml-engineering);
- memory fractions e_m scale with the ratio of the achievable HBM fractions of the two memory
  generations, measured here as the streaming fraction of the bf16 M=1, N=K=8192 GEMM curve of the
  measured GPUs of each generation (HBM2e: A100; HBM3: H100; HBM3e: H200, B200, B300, GB200, GB300;
  GDDR6: L40S); no measured GPU of a generation -> ratio 1;
- SM (or matrix-engine) count and tile shapes from the datasheet (SM_COUNTS, TILES below);
- collectives: the template's bus-bandwidth fraction of its link times this GPU's link bandwidth; for
  GPUs without NVLink SHARP the fraction at n = 2 (no in-switch reduction) is used for every n;
- fixed overheads (launch, per-sequence, per-step) are the template's: no public measurement of
  ROCm / SynapseAI / XLA kernel launch costs is in this project's sources.
Every prior is marked ``extrapolated: true`` with its template and rules, so error bands can widen.
Dtypes the GPU has no catalog peak for are dropped from its prior.
"""
from __future__ import annotations

#: (count, source). SMs for NVIDIA, CUs for AMD, matrix engines (MME / MXU / NeuronCore) otherwise.
SM_COUNTS: dict[str, tuple[int, str]] = {
    "a100_40gb_sxm": (108, "NVIDIA A100 Tensor Core GPU Architecture whitepaper, 108 SMs: https://images.nvidia.com/aem-dam/en-zz/Solutions/data-center/nvidia-ampere-architecture-whitepaper.pdf"),
    "a100_80gb_sxm": (108, "NVIDIA A100 Tensor Core GPU Architecture whitepaper, 108 SMs: https://images.nvidia.com/aem-dam/en-zz/Solutions/data-center/nvidia-ampere-architecture-whitepaper.pdf"),
    "a100_40gb_pcie": (108, "NVIDIA A100 Tensor Core GPU Architecture whitepaper, 108 SMs: https://images.nvidia.com/aem-dam/en-zz/Solutions/data-center/nvidia-ampere-architecture-whitepaper.pdf"),
    "a100_80gb_pcie": (108, "NVIDIA A100 Tensor Core GPU Architecture whitepaper, 108 SMs: https://images.nvidia.com/aem-dam/en-zz/Solutions/data-center/nvidia-ampere-architecture-whitepaper.pdf"),
    "h100_sxm": (132, "NVIDIA Hopper architecture in depth, H100 SXM5 132 SMs: https://developer.nvidia.com/blog/nvidia-hopper-architecture-in-depth/"),
    "h100_pcie": (114, "NVIDIA Hopper architecture in depth, H100 PCIe 114 SMs: https://developer.nvidia.com/blog/nvidia-hopper-architecture-in-depth/"),
    "h100_nvl": (132, "[uncertain] H100 NVL taken as the SXM5 GH100 configuration (132 SMs): https://developer.nvidia.com/blog/nvidia-hopper-architecture-in-depth/"),
    "gh200": (132, "NVIDIA Grace Hopper Superchip architecture whitepaper (H100 with 132 SMs): https://resources.nvidia.com/en-us-grace-cpu/nvidia-grace-hopper"),
    "h200_sxm": (132, "same GH100 SXM configuration as H100 SXM (hardware.yaml arch note), 132 SMs: https://developer.nvidia.com/blog/nvidia-hopper-architecture-in-depth/"),
    "h200_nvl": (132, "[uncertain] same GH100 configuration as H200 SXM, 132 SMs: https://developer.nvidia.com/blog/nvidia-hopper-architecture-in-depth/"),
    "h20": (78, "[uncertain] hardware.yaml arch note 'GH100 cut down, ~78 SMs' (no NVIDIA datasheet figure)"),
    "b200_hgx": (148, "Chips and Cheese, 'Nvidia's B200: keeping the CUDA juggernaut rolling' (74 SMs per die, 148): https://chipsandcheese.com/p/nvidias-b200-keeping-the-cuda-juggernaut"),
    "gb200_nvl72": (148, "same B200 GPU, 148 SMs: https://chipsandcheese.com/p/nvidias-b200-keeping-the-cuda-juggernaut"),
    "b300_hgx": (160, "[uncertain] NVIDIA 'Inside NVIDIA Blackwell Ultra' (160 SMs; shipping SKUs may enable fewer): https://developer.nvidia.com/blog/inside-nvidia-blackwell-ultra-the-chip-powering-the-ai-factory-era/"),
    "gb300_nvl72": (160, "[uncertain] NVIDIA 'Inside NVIDIA Blackwell Ultra' (160 SMs): https://developer.nvidia.com/blog/inside-nvidia-blackwell-ultra-the-chip-powering-the-ai-factory-era/"),
    "l40s": (142, "[derived] L40S datasheet 18,176 CUDA cores / 128 per Ada SM = 142: https://resources.nvidia.com/en-us-l40s/l40s-datasheet-28413"),
    "l4": (58, "[derived] L4 datasheet 7,424 CUDA cores / 128 per Ada SM = 58: https://resources.nvidia.com/en-us-data-center-overview/l4-gpu-datasheet"),
    "rtx_4090": (128, "NVIDIA Ada Lovelace architecture whitepaper, RTX 4090 128 SMs: https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf"),
    "mi250x": (220, "AMD Instinct MI250X datasheet, 220 CUs (2 GCDs): https://www.amd.com/content/dam/amd/en/documents/instinct-business-docs/product-briefs/instinct-mi250x-datasheet.pdf"),
    "mi300x": (304, "AMD Instinct MI300X datasheet, 304 CUs: https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/data-sheets/amd-instinct-mi300x-data-sheet.pdf"),
    "mi325x": (304, "AMD Instinct MI325X datasheet, 304 CUs: https://www.amd.com/content/dam/amd/en/documents/instinct-tech-docs/product-briefs/instinct-mi325x-datasheet.pdf"),
    "mi355x": (256, "AMD Instinct MI355X product page, 256 CUs: https://www.amd.com/en/products/accelerators/instinct/mi350/mi355x.html"),
    "gaudi2": (2, "Habana Gaudi2 whitepaper: 2 matrix multiplication engines (MME): https://habana.ai/wp-content/uploads/2022/05/Gaudi2-Whitepaper.pdf"),
    "gaudi3": (8, "Intel Gaudi 3 AI accelerator whitepaper: 8 MMEs of 256x256 MACs: https://www.intel.com/content/www/us/en/content-details/817486/intel-gaudi-3-ai-accelerator-white-paper.html"),
    "tpu_v4": (8, "Google Cloud TPU v4 docs: 2 TensorCores x 4 MXUs (128x128): https://cloud.google.com/tpu/docs/v4"),
    "tpu_v5p": (8, "Google Cloud TPU v5p docs: 2 TensorCores x 4 MXUs (128x128): https://cloud.google.com/tpu/docs/v5p"),
    "tpu_v5e": (4, "Google Cloud TPU v5e docs: 1 TensorCore x 4 MXUs (128x128): https://cloud.google.com/tpu/docs/v5e"),
    "tpu_v6e": (2, "Google Cloud TPU v6e docs: 1 TensorCore x 2 MXUs (256x256): https://cloud.google.com/tpu/docs/v6e"),
    "trainium2": (8, "AWS Trainium2 architecture docs: 8 NeuronCore-v3 per chip: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-hardware/trainium2.html"),
    "inferentia2": (2, "AWS Inferentia2 architecture docs: 2 NeuronCore-v2 per chip: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-hardware/inferentia2.html"),
}

#: template measured GPU for each unmeasured one (same architecture and vendor where possible)
TEMPLATE: dict[str, str] = {
    "a100_40gb_sxm": "a100_80gb_sxm", "a100_40gb_pcie": "a100_80gb_sxm", "a100_80gb_pcie": "a100_80gb_sxm",
    "h100_pcie": "h100_sxm", "h100_nvl": "h100_sxm", "gh200": "h100_sxm", "h20": "h100_sxm",
    "h200_nvl": "h200_sxm", "l4": "l40s", "rtx_4090": "l40s",
    "mi250x": "a100_80gb_sxm", "mi300x": "h100_sxm", "mi325x": "h200_sxm", "mi355x": "b200_hgx",
    "gaudi2": "a100_80gb_sxm", "gaudi3": "h100_sxm", "tpu_v4": "a100_80gb_sxm", "tpu_v5p": "h100_sxm",
    "tpu_v5e": "a100_80gb_sxm", "tpu_v6e": "h100_sxm", "trainium2": "h100_sxm", "inferentia2": "a100_80gb_sxm",
    # measured GPUs whose own tables are missing a class fall back to these for that class only
    "b300_hgx": "b200_hgx", "gb300_nvl72": "gb200_nvl72", "gb200_nvl72": "b200_hgx",
}

#: minimum output tile (tm_min, tn_min) of non-NVIDIA matrix engines: systolic array / MME geometry
#: (sources as in SM_COUNTS; AMD CDNA MFMA tiles are as small as NVIDIA's, so AMD keeps the template's)
TILES: dict[str, tuple[float, float]] = {
    "gaudi2": (256.0, 256.0), "gaudi3": (256.0, 256.0), "tpu_v4": (128.0, 128.0), "tpu_v5p": (128.0, 128.0),
    "tpu_v5e": (128.0, 128.0), "tpu_v6e": (256.0, 256.0), "trainium2": (128.0, 128.0), "inferentia2": (128.0, 128.0),
}


def memory_generation(hbm_type: str | None) -> str:
    t = (hbm_type or "").upper()
    for gen in ("HBM3E", "HBM3", "HBM2E", "HBM2", "GDDR6X", "GDDR6"):
        if t.startswith(gen):
            return gen
    return "HBM" if t.startswith("HBM") else "unknown"
