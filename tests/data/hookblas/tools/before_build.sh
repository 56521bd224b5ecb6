# numpy 2.4.6's tools/wheels/cibw_before_build.sh, its OpenBLAS part.
set -xe
PROJECT_DIR="${1:-$PWD}"
pkgconf_path=$PROJECT_DIR/.openblas
rm -rf $pkgconf_path
mkdir -p $pkgconf_path
python -m pip install scipy-openblas64==0.3.31.188.0
python -c "import scipy_openblas64; print(scipy_openblas64.get_pkg_config())" > $pkgconf_path/scipy-openblas.pc
