/* Every internal active-message id, in one list. Ids FERRY_AM_ID_MAX..FY_AM_ID_ALL-1 belong to
 * ferry's own protocols (the public calls refuse them); each protocol registers its handlers
 * with fy_am_set_internal_handler. An id is part of the wire protocol: never reuse or renumber
 * one. */
#ifndef FY_PROTO_AM_IDS_H
#define FY_PROTO_AM_IDS_H

/* One-sided operations performed by the target (proto/rma_am.c). */
#define FY_AM_ID_RMA_REQUEST 200u
#define FY_AM_ID_RMA_REPLY 201u

/* Tagged messages (proto/tag.c, proto/tag_rndv.c; wire format in proto/tag.h). */
#define FY_AM_ID_TAG_EAGER 210u
#define FY_AM_ID_TAG_RTS 211u
#define FY_AM_ID_TAG_CTS 212u
#define FY_AM_ID_TAG_DATA 213u
#define FY_AM_ID_TAG_DONE 214u
#define FY_AM_ID_TAG_COOKIE 215u
#define FY_AM_ID_TAG_FLOW 216u /* EAGER_OFF / EAGER_SMALL / EAGER_ON */

/* Named segments (proto/segment.c, proto/rsegment.c; wire format in proto/segment.h). */
#define FY_AM_ID_SEG_CONNECT 220u
#define FY_AM_ID_SEG_REPLY 221u
#define FY_AM_ID_SEG_DISCONNECT 222u
#define FY_AM_ID_SEG_NOTIFY 223u

#endif
