#ifndef NF_VERSION_H
#define NF_VERSION_H
#define NF_VERSION "0.1.0"
#endif
