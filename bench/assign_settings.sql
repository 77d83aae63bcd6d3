-- The psql variables of the labels' benchmarks (bench/assign_e2e.sql,
-- bench/assign_join.sql), their defaults where not given with -v: device
-- (gpuclust.device, gpu), workers (8) and opts (the fits' options, {})
\set ON_ERROR_STOP 1
\pset pager off
\if :{?device}
\else
\set device gpu
\endif
\if :{?workers}
\else
\set workers 8
\endif
\if :{?opts}
\else
\set opts '{}'
\endif
