¬*J
lance.ivf.sample_rate256J,
'lance.ivf.shuffle_partition_concurrency2J
lance.ivf.max_iters50J,
#lance.ivf.shuffle_partition_batches10240J!
lance.hnsw.prefetch_distance2J
lance.sq.sample_rate256J
lance.skip_transposefalse