"J
lance.pq.kmeans_redos1J
lance.pq.max_iters50J
lance.skip_transposefalseJ
lance.ivf.max_iters50J,
'lance.ivf.shuffle_partition_concurrency2J,
#lance.ivf.shuffle_partition_batches10240J
lance.pq.sample_rate256J
lance.ivf.sample_rate256