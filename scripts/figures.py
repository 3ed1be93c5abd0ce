"""matplotlib for the plotting scripts: headless, and each figure saved as PNG and SVG."""
import os
import sys

try:
    import matplotlib
except ImportError:
    sys.exit(f"{os.path.basename(sys.argv[0])}: needs matplotlib (Debian: python3-matplotlib; scripts/setup.sh "
             "installs it); run it with /usr/bin/python3")

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402,F401  (the scripts plot through figures.plt)


def save(fig, outdir, name):
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(os.path.join(outdir, f"{name}.{ext}"), dpi=110)
    plt.close(fig)
