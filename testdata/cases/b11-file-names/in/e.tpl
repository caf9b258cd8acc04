images:
- name: nginx
  newTag: 1.25.0 # {"$imagepolicy": "ns:p:tag"}
