/* Streams of numbered messages (active messages): every message's header begins with
 * ft_seq_hdr_t (a magic number, its sequence number, its payload's size), and its payload is
 * size bytes of the pattern ft_pattern_seed(sender, seq, size). A receiver checks that they come
 * in order, whole, and every byte. */
#ifndef FT_SEQ_H
#define FT_SEQ_H

#include <stddef.h>
#include <stdint.h>

#include <ferry/ferry.h>

typedef struct ft_seq_hdr {
    uint32_t magic;
    uint32_t seq;
    uint64_t size;
} ft_seq_hdr_t;

/* The receiving end of one stream. */
typedef struct ft_seq_rx {
    uint32_t magic;       /* of the stream's headers */
    uint32_t sender;      /* whose pattern the payloads carry */
    uint32_t next_seq;    /* of the next message expected */
    uint64_t received;    /* messages checked */
    ferry_ep_t *reply_ep; /* of the last message */
} ft_seq_rx_t;

/* A message of rx's stream whose header is header_size bytes (ft_seq_hdr_t and what follows
 * it): fails the test unless header_length is header_size, the magic is rx's, the sequence
 * number the next, the payload as long as the header says and every byte the sender's pattern;
 * counts it and keeps its reply endpoint. header_copy (header_size bytes) gets the header. */
void ft_seq_recv(ft_seq_rx_t *rx, const void *header, size_t header_length, void *header_copy,
                 size_t header_size, const void *data, size_t length,
                 const ferry_am_recv_params_t *params);

/* Send message seq of rx's kind: size bytes of sender's pattern after an ft_seq_hdr_t of magic,
 * with active-message id on ep; progress worker until the buffer is free again (30 s at most);
 * the send must complete with FERRY_OK. */
void ft_seq_send(ferry_worker_t *worker, ferry_ep_t *ep, unsigned id, uint32_t magic,
                 uint32_t sender, uint32_t seq, size_t size);

/* An active-message handler for a stream whose header is ft_seq_hdr_t alone; arg: its
 * ft_seq_rx_t. */
ferry_status_t ft_seq_handler(void *arg, const void *header, size_t header_length, void *data,
                              size_t length, const ferry_am_recv_params_t *params);

#endif
